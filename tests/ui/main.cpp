// GoogleTest main for the UI suites: a QApplication on Qt's offscreen platform, created
// only when tests actually run (test discovery lists them without a display).
#include <gtest/gtest.h>

#include <QApplication>
#include <QSettings>
#include <QStandardPaths>
#include <QTemporaryDir>

int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    if (GTEST_FLAG_GET(list_tests)) return RUN_ALL_TESTS();
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir runtime_dir;
    if (!qEnvironmentVariableIsSet("XDG_RUNTIME_DIR")) qputenv("XDG_RUNTIME_DIR", runtime_dir.path().toUtf8());
    // Settings and recent files of the tests never touch the user's own.
    QStandardPaths::setTestModeEnabled(true);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("InferScopeTests"));
    QApplication::setApplicationName(QStringLiteral("InferScopeTests"));
    // Test mode keeps the settings file between runs: each run starts from the defaults.
    QSettings().clear();
    return RUN_ALL_TESTS();
}
