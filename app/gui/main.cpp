// inferscope: the desktop app. With --quit it runs headlessly (reports, tests):
//   inferscope --model F --prompt TEXT --generate N --export-all DIR --quit
#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QSize>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "ui/automation.h"
#include "ui/main_window.h"

namespace {

// A headless run (--quit) needs no display: where there is none, use Qt's offscreen
// platform instead of failing to connect to X11/Wayland.
void use_offscreen_platform_when_headless(int argc, char** argv) {
    bool quit = false, screenshots = false;
    for (int i = 1; i < argc; ++i) {
        quit |= std::strcmp(argv[i], "--quit") == 0;
        screenshots |= std::strcmp(argv[i], "--screenshots") == 0;
    }
    const bool headless = quit && !screenshots;
    // An empty DISPLAY names no display, as scripts/run also reads it.
    const bool has_display = !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY");
    if (headless && !has_display && !qEnvironmentVariableIsSet("QT_QPA_PLATFORM")) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
    }
}

}  // namespace

int main(int argc, char** argv) {
    use_offscreen_platform_when_headless(argc, argv);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("InferScope"));
    QApplication::setApplicationName(QStringLiteral("InferScope"));
    QApplication::setApplicationVersion(QStringLiteral("0.1.0"));
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/inferscope/icons/inferscope.svg")));

    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::tr("InferScope: watch what LLM inference costs, step by step."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("model"), QApplication::tr("GGUF model to open (default: the built-in stories260K; builtin:synthetic opens the random-weight model)"),
                                 QStringLiteral("[model.gguf]"));
    const QCommandLineOption model_option(QStringLiteral("model"), QApplication::tr("GGUF model to open."), QStringLiteral("file"));
    const QCommandLineOption prompt_option(QStringLiteral("prompt"), QApplication::tr("Prompt text."), QStringLiteral("text"));
    const QCommandLineOption generate_option(QStringLiteral("generate"), QApplication::tr("Generate N tokens after loading."),
                                             QStringLiteral("N"));
    const QCommandLineOption export_option(QStringLiteral("export-all"),
                                           QApplication::tr("Export every chart (PNG, SVG, CSV, JSON) into a folder."),
                                           QStringLiteral("dir"));
    const QCommandLineOption quit_option(QStringLiteral("quit"),
                                         QApplication::tr("Quit when done, without showing a window (headless)."));
    const QCommandLineOption screenshot_option(
        QStringLiteral("screenshots"), QApplication::tr("Show the window and save PNGs of it and of each chart into a folder."),
        QStringLiteral("dir"));
    const QCommandLineOption labs_option(
        QStringLiteral("measure-labs"),
        QApplication::tr("Before exporting, run the lab panels' measurements (batch sweep and replay, simulated and for real, "
                         "prefill vs decode, activation outliers of the prompt, speculative decoding against the default "
                         "draft)."));
    const QCommandLineOption size_option(QStringLiteral("window-size"),
                                         QApplication::tr("Open the window at this size, e.g. 1000x700 (default: as last closed)."),
                                         QStringLiteral("WxH"));
    parser.addOptions({model_option, prompt_option, generate_option, export_option, quit_option, screenshot_option, labs_option,
                       size_option});
    parser.process(app);

    inferscope::ui::AutomationOptions options;
    options.model = parser.isSet(model_option) ? parser.value(model_option)
                                               : parser.positionalArguments().value(0, QString());
    options.prompt = parser.value(prompt_option);
    bool valid_count = true;
    options.generate = parser.isSet(generate_option) ? parser.value(generate_option).toInt(&valid_count) : 0;
    if (!valid_count || options.generate < 0) {
        std::fprintf(stderr, "error: --generate needs a non-negative number of tokens\n");
        return 1;
    }
    options.export_dir = parser.value(export_option);
    options.quit = parser.isSet(quit_option);
    options.screenshot_dir = parser.value(screenshot_option);
    options.measure_labs = parser.isSet(labs_option);
    const bool show_window = !options.quit || !options.screenshot_dir.isEmpty();

    QSize window_size;
    if (parser.isSet(size_option)) {
        const QStringList parts = parser.value(size_option).split(QLatin1Char('x'));
        bool width_ok = false, height_ok = false;
        if (parts.size() == 2) window_size = QSize(parts[0].toInt(&width_ok), parts[1].toInt(&height_ok));
        if (!width_ok || !height_ok || window_size.width() < 1 || window_size.height() < 1 || window_size.width() > 16384 ||
            window_size.height() > 16384) {
            std::fprintf(stderr, "error: --window-size: \"%s\" is not WIDTHxHEIGHT in pixels (1..16384)\n",
                         qPrintable(parser.value(size_option)));
            return 1;
        }
    }

    inferscope::ui::MainWindow window(/*interactive=*/!options.quit);
    if (window_size.isValid()) window.resize(window_size);
    inferscope::ui::AutomationRunner runner(window, options);
    QObject::connect(&runner, &inferscope::ui::AutomationRunner::finished, &app, [&](int code) {
        if (options.quit) QApplication::exit(code);
    });
    if (show_window) window.show();
    QTimer::singleShot(0, &runner, &inferscope::ui::AutomationRunner::start);
    return QApplication::exec();
}
