// The main window driven as a user would: open a model, type a prompt, generate, export.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include <unistd.h>

#include <QDir>
#include <QElapsedTimer>
#include <QDomDocument>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLayout>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QRegularExpression>
#include <QSlider>
#include <QStatusBar>
#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QJsonDocument>
#include <QTabBar>
#include <QToolButton>
#include <QJsonObject>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include "engine/gguf/gguf_value.h"
#include "engine/synth/synthetic_model.h"
#include "ui/automation.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/guided_tour.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/outliers_lab.h"
#include "ui/labs/phases_lab.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/main_window.h"
#include "ui/model_info_widget.h"
#include "ui/panels/batch_curve_panel.h"
#include "ui/panels/kv_memory_panel.h"
#include "ui/panels/latency_panel.h"
#include "ui/panels/outlier_panels.h"
#include "ui/panels/serving_replay_panel.h"
#include "ui/panels/soft_labels_panel.h"
#include "ui/panels/speculative_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::shared_model_path;
using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;

// Opens a model and waits until it is loaded; returns false on failure or timeout.
bool open_and_wait(MainWindow& window, const QString& path) {
    bool loaded = false, failed = false;
    const auto a = QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    const auto b = QObject::connect(&window.controller(), &EngineController::load_failed, [&] { failed = true; });
    window.open_model(path);
    wait_until([&] { return (loaded || failed) && !window.controller().busy(); }, kEngineWaitMs);
    QObject::disconnect(a);
    QObject::disconnect(b);
    return loaded;
}

// Generates `tokens` tokens from the generation panel's prompt; false if no report came in time.
bool generate_and_wait(MainWindow& window, int tokens) {
    bool finished = false;
    const auto connection =
        QObject::connect(&window.controller(), &EngineController::generation_finished, [&] { finished = true; });
    window.generation_panel().set_n_predict(tokens);
    window.start_generation();
    const bool done = wait_until([&] { return finished && !window.controller().busy(); }, kEngineWaitMs);
    QObject::disconnect(connection);
    return done;
}

TEST(MainWindow, GeneratesAndPlotsEveryStep) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    MainWindow window;
    window.show();
    ASSERT_TRUE(open_and_wait(window, shared_model_path("stories260K.gguf")));
    ASSERT_TRUE(window.controller().model().path.endsWith(QLatin1String("stories260K.gguf")));

    QPlainTextEdit* prompt = window.generation_panel().prompt_edit();
    prompt->clear();
    QTest::keyClicks(prompt, QStringLiteral("Once upon a time"));
    window.generation_panel().set_n_predict(16);

    std::vector<StepRecord> steps;
    QObject::connect(&window.controller(), &EngineController::steps_completed,
                     [&](const QVector<StepRecord>& batch) { steps.insert(steps.end(), batch.begin(), batch.end()); });
    bool finished = false;
    QObject::connect(&window.controller(), &EngineController::generation_finished, [&] { finished = true; });
    QTest::keyClick(prompt, Qt::Key_Return, Qt::ControlModifier);  // Ctrl+Enter generates
    ASSERT_TRUE(wait_until([&] { return finished && !window.controller().busy(); }, kEngineWaitMs));

    EXPECT_EQ(window.latency_panel().prefill_point_count(), 1);
    EXPECT_EQ(window.latency_panel().decode_point_count(), 16);
    ASSERT_FALSE(steps.empty());
    // The KV chart's last point is the engine's own byte count after the last step.
    const QPointF last = window.kv_memory_panel().last_in_use_point();
    EXPECT_EQ(last.x(), steps.back().context_length);
    EXPECT_EQ(static_cast<qint64>(last.y()), steps.back().kv_bytes_in_use);
    // Drawn in KiB, the unit its largest value needs.
    const PlotData kv = window.kv_memory_panel().plot_data();
    EXPECT_EQ(kv.y_label, QStringLiteral("KV cache (KiB)"));
    const auto in_use = std::find_if(kv.series.begin(), kv.series.end(), [](const PlotSeries& s) { return s.name == QLatin1String("in use"); });
    ASSERT_NE(in_use, kv.series.end());
    EXPECT_DOUBLE_EQ(in_use->points.back().y(), static_cast<double>(steps.back().kv_bytes_in_use) / 1024.0);
    // stories260K: 5 layers x 4 KV heads x 8 dims x 2 (K and V) x 2 bytes = 640 bytes per token
    EXPECT_EQ(steps.back().kv_bytes_in_use, qint64{640} * steps.back().context_length);
    EXPECT_EQ(steps.back().context_length, 5 + 16);  // BOS + 4 prompt tokens, then 16 generated
    const QString output = window.generation_panel().output_view()->toPlainText();
    EXPECT_TRUE(output.startsWith(QLatin1String("Once upon a time"))) << output.toStdString();
    // The side panel and the latency chart's title give the same decode speed.
    const QString speed = window.generation_panel().decode_speed_text();
    const QString tokens_per_s = speed.left(speed.indexOf(QLatin1String(" tokens/s")));
    ASSERT_FALSE(tokens_per_s.isEmpty()) << speed.toStdString();
    EXPECT_TRUE(window.latency_panel().chart()->title().contains(QStringLiteral("= %1 tokens/s").arg(tokens_per_s)))
        << window.latency_panel().chart()->title().toStdString() << " vs " << speed.toStdString();
}

TEST(MainWindow, ABadFileShowsAnErrorAndKeepsTheModel) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    QTemporaryDir dir;
    const QString bad = dir.filePath(QStringLiteral("truncated.gguf"));
    {
        QFile source(shared_model_path("stories260K.gguf"));
        ASSERT_TRUE(source.open(QIODevice::ReadOnly));
        QFile out(bad);
        ASSERT_TRUE(out.open(QIODevice::WriteOnly));
        out.write(source.read(5000));
    }
    MainWindow window;
    window.show();
    ASSERT_TRUE(open_and_wait(window, shared_model_path("stories260K.gguf")));
    EXPECT_FALSE(open_and_wait(window, bad));

    const auto boxes = window.findChildren<QMessageBox*>();
    ASSERT_EQ(boxes.size(), 1);
    EXPECT_TRUE(boxes.front()->text().contains(QLatin1String("truncated"))) << boxes.front()->text().toStdString();
    EXPECT_TRUE(boxes.front()->text().contains(QLatin1String("previous model stays loaded")));
    EXPECT_TRUE(window.controller().model().path.endsWith(QLatin1String("stories260K.gguf")));
    boxes.front()->close();

    // and the old model still generates
    ASSERT_TRUE(generate_and_wait(window, 4));
    EXPECT_EQ(window.latency_panel().decode_point_count(), 4);
}

TEST(MainWindow, BuiltInModelWithoutAnyFile) {
    MainWindow window;
    ASSERT_TRUE(open_and_wait(window, QString()));
    EXPECT_TRUE(window.controller().model().builtin);
    EXPECT_FALSE(window.controller().model().synthetic);
    EXPECT_TRUE(window.windowTitle().contains(QLatin1String("built-in stories260K"))) << window.windowTitle().toStdString();

    ASSERT_TRUE(open_and_wait(window, QStringLiteral("builtin:synthetic")));
    EXPECT_TRUE(window.controller().model().builtin);
    EXPECT_TRUE(window.controller().model().synthetic);
    EXPECT_TRUE(window.windowTitle().contains(QLatin1String("built-in synthetic"))) << window.windowTitle().toStdString();
}

TEST(MainWindow, EveryTabHasHelpAndTheTourWalksTheLessonsInOrder) {
    MainWindow window(false);
    QTabWidget& tabs = window.chart_tabs();
    for (int i = 0; i < tabs.count(); ++i) {
        tabs.setCurrentIndex(i);
        const QString title = tabs.tabToolTip(i);
        const QString help = window.current_tab_help();
        EXPECT_TRUE(help.contains(title)) << title.toStdString() << ": " << help.toStdString();
        EXPECT_TRUE(help.contains(QLatin1String("Try this:"))) << title.toStdString();
    }

    GuidedTour& tour = window.open_guided_tour();
    const QStringList lessons = {QStringLiteral("prefill-vs-decode"),   QStringLiteral("kv-memory"),
                                 QStringLiteral("batching"),            QStringLiteral("quantization"),
                                 QStringLiteral("activation-outliers"), QStringLiteral("speculative-speedup")};
    ASSERT_EQ(tour.step_count(), lessons.size());
    for (int step = 0; step < tour.step_count(); ++step) {
        tour.go_to(step);
        EXPECT_EQ(tabs.currentWidget()->objectName(), lessons[step]) << "lesson " << step;
        EXPECT_TRUE(tour.body_text().contains(QLatin1String("Try this:")));
    }
    tour.go_to(tour.step_count());  // past the end stays on the last lesson
    EXPECT_EQ(tour.step(), tour.step_count() - 1);
}

TEST(MainWindow, WithoutAModelTheWindowSaysWhatToDo) {
    MainWindow window(false);
    EXPECT_TRUE(window.model_info().empty_text().contains(QLatin1String("No model is loaded"))) << window.model_info().empty_text().toStdString();
    QTemporaryDir dir;
    const QString missing = dir.filePath(QStringLiteral("missing.gguf"));
    EXPECT_FALSE(open_and_wait(window, missing));
    const QString text = window.model_info().empty_text();
    EXPECT_TRUE(text.startsWith(QLatin1String("missing.gguf could not be loaded."))) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("File › Open"))) << text.toStdString();
    ASSERT_TRUE(open_and_wait(window, QString()));
    EXPECT_TRUE(window.model_info().empty_text().isEmpty());
}

TEST(MainWindow, OpeningAnotherModelClearsTheResultsOfThePreviousOne) {
    MainWindow window(false);
    ASSERT_TRUE(open_and_wait(window, QString()));
    ASSERT_TRUE(generate_and_wait(window, 8));
    EXPECT_FALSE(window.generation_panel().output_view()->toPlainText().isEmpty());
    window.speculative_panel().set_measurement(4, 1.5, 0.7, 0.2);
    const auto measured_points = [&] {
        for (const PlotSeries& s : window.speculative_panel().plot_data().series) {
            if (s.name.startsWith(QLatin1String("measured"))) return s.points.size();
        }
        return qsizetype{-1};
    };
    ASSERT_EQ(measured_points(), 1);
    // The analysis labs' charts, filled while their tabs are hidden (as --measure-labs does).
    window.outliers_lab().set_prompt(QStringLiteral("Once upon a time"));
    window.outliers_lab().run_now();
    window.soft_labels_lab().set_prompt(QStringLiteral("Once upon a time"));
    window.soft_labels_lab().run_now();
    const auto points = [](const ChartPanel& panel) {
        qsizetype n = 0;
        for (const PlotSeries& s : panel.plot_data().series) n += s.points.size();
        return n;
    };
    ASSERT_TRUE(wait_until(
        [&] { return points(window.outliers_lab().heat_strip_panel()) > 0 && points(window.soft_labels_lab().panel()) > 0; },
        kEngineWaitMs));

    ASSERT_TRUE(open_and_wait(window, QStringLiteral("builtin:synthetic")));
    EXPECT_TRUE(window.generation_panel().output_view()->toPlainText().isEmpty());
    EXPECT_EQ(measured_points(), 0);
    EXPECT_EQ(points(window.outliers_lab().heat_strip_panel()), 0);
    EXPECT_EQ(points(window.outliers_lab().histogram_panel()), 0);
    EXPECT_EQ(points(window.soft_labels_lab().panel()), 0);
}

TEST(MainWindow, TheHeadlessSummaryTabulatesWhatWasMeasured) {
    MainWindow window(false);
    ASSERT_TRUE(open_and_wait(window, QString()));
    ASSERT_TRUE(generate_and_wait(window, 8));
    const QString summary = measurement_summary(window);
    EXPECT_TRUE(summary.startsWith(QLatin1String("model: built-in stories260K"))) << summary.toStdString();
    EXPECT_TRUE(summary.contains(QLatin1String("fingerprint: ") + window.controller().model().fingerprint));
    EXPECT_TRUE(summary.contains(QLatin1String("| step-latency | ") + window.latency_panel().plot_data().title + QLatin1String(" | 9 |")))
        << summary.toStdString();  // one prefill point and eight decode points
    const qsizetype empty_list = summary.indexOf(QLatin1String("not measured: "));
    ASSERT_GE(empty_list, 0) << summary.toStdString();
    EXPECT_TRUE(summary.mid(empty_list).contains(QLatin1String("soft-labels-student")));
    EXPECT_FALSE(summary.contains(QLatin1String("| soft-labels-student |")));
}

// At 1,000 x 700 no control is squeezed below the size it needs to show its text: every tab
// in turn, the left column and the lab's own controls.
TEST(MainWindow, AtASmallSizeNoControlIsSqueezed) {
    MainWindow window(false);
    ASSERT_TRUE(open_and_wait(window, QString()));
    // At the default size every tab is in view: the tab bar shows no scroll arrows.
    window.resize(1440, 880);
    window.show();
    QCoreApplication::processEvents();
    for (const QToolButton* arrow : window.chart_tabs().tabBar()->findChildren<QToolButton*>()) {
        EXPECT_FALSE(arrow->isVisible()) << "the tabs do not fit at 1440 x 880";
    }
    window.resize(1000, 700);
    QCoreApplication::processEvents();
    EXPECT_EQ(window.size(), QSize(1000, 700)) << "the window's minimum is larger";
    QStringList squeezed;
    QTabWidget& tabs = window.chart_tabs();
    for (int i = 0; i < tabs.count(); ++i) {
        tabs.setCurrentIndex(i);
        QCoreApplication::processEvents();
        for (QWidget* w : window.findChildren<QWidget*>()) {
            const bool control = qobject_cast<QAbstractButton*>(w) || qobject_cast<QComboBox*>(w) ||
                                 qobject_cast<QAbstractSlider*>(w) || qobject_cast<QAbstractSpinBox*>(w) ||
                                 (qobject_cast<QLabel*>(w) && !qobject_cast<QLabel*>(w)->wordWrap());
            // The tab bar's own scroll arrows are Qt's business.
            if (!control || !w->isVisible() || w->window() != &window || qobject_cast<QTabBar*>(w->parentWidget())) continue;
            const QSize need = w->minimumSizeHint();
            if (w->width() < need.width() || w->height() < need.height()) {
                const QString name = QString::fromLatin1(w->metaObject()->className()) + QLatin1Char(' ') +
                                     (qobject_cast<QLabel*>(w) ? qobject_cast<QLabel*>(w)->text()
                                      : qobject_cast<QAbstractButton*>(w) ? qobject_cast<QAbstractButton*>(w)->text()
                                                                          : w->objectName());
                squeezed << QStringLiteral("%1 [%2]: %3x%4 < %5x%6")
                                .arg(name, tabs.tabText(i))
                                .arg(w->width()).arg(w->height()).arg(need.width()).arg(need.height());
            }
        }
    }
    squeezed.removeDuplicates();
    EXPECT_TRUE(squeezed.isEmpty()) << squeezed.size() << " squeezed:\n" << squeezed.join(QLatin1Char('\n')).toStdString();
}

TEST(MainWindow, ExportWritesValidFilesWithThePlottedData) {
    MainWindow window;
    ASSERT_TRUE(open_and_wait(window, QString()));
    ASSERT_TRUE(generate_and_wait(window, 8));
    // One measured batch size fills the batching curves and the replay.
    bool replayed = false;
    QObject::connect(&window.batching_lab(), &BatchingLab::replay_changed, [&] { replayed = true; });
    window.batching_lab().set_run_settings(8, 4, {1, 2});
    window.batching_lab().batch_slider().setValue(2);
    ASSERT_TRUE(wait_until([&] { return replayed; }, kEngineWaitMs));
    QStringList names;
    for (const ChartPanel* panel : window.chart_panels()) names << panel->export_name();
    for (const char* name : {"batch-throughput", "batch-step-latency", "batching-replay", "prefill-vs-decode", "outlier-histogram",
                             "outlier-dimensions"}) {
        EXPECT_TRUE(names.contains(QLatin1String(name))) << name;
    }

    // Exporting leaves every live view as it was: views on hidden tabs are laid out at the
    // export size only while they render.
    QList<QSize> view_sizes;
    QList<QRectF> chart_rects;
    for (const ChartPanel* panel : window.chart_panels()) {
        view_sizes << panel->chart_view()->size();
        chart_rects << panel->chart()->geometry();
    }
    QTemporaryDir dir;
    ASSERT_TRUE(window.export_all_charts(dir.path()).isEmpty());
    for (int i = 0; i < window.chart_panels().size(); ++i) {
        const ChartPanel* panel = window.chart_panels()[i];
        EXPECT_EQ(panel->chart_view()->size(), view_sizes[i]) << panel->export_name().toStdString();
        EXPECT_EQ(panel->chart()->geometry(), chart_rects[i]) << panel->export_name().toStdString();
    }
    for (const ChartPanel* panel : window.chart_panels()) {
        const QString stem = dir.filePath(panel->export_name());
        QFile png(stem + QStringLiteral(".png"));
        ASSERT_TRUE(png.open(QIODevice::ReadOnly));
        const QByteArray png_bytes = png.readAll();
        EXPECT_TRUE(png_bytes.startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
        EXPECT_GT(png_bytes.size(), 10000);

        QFile svg(stem + QStringLiteral(".svg"));
        ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
        QDomDocument document;
        EXPECT_TRUE(document.setContent(&svg));
        EXPECT_EQ(document.documentElement().tagName(), QStringLiteral("svg"));

        QFile csv(stem + QStringLiteral(".csv"));
        ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
        const QByteArray csv_text = csv.readAll();
        // The provenance block: what produced the numbers.
        const ModelSummary& model = window.controller().model();
        EXPECT_TRUE(csv_text.startsWith("# chart: ")) << csv_text.left(300).toStdString();
        EXPECT_TRUE(csv_text.contains("# model: built-in stories260K")) << csv_text.left(300).toStdString();
        EXPECT_TRUE(csv_text.contains(("# fingerprint: " + model.fingerprint + QLatin1Char('\n')).toUtf8()));
        EXPECT_EQ(model.fingerprint.size(), 16);
        const PlotData plotted = panel->plot_data();
        EXPECT_EQ(csv_text.contains("# no data: nothing measured yet"),
                  std::all_of(plotted.series.begin(), plotted.series.end(), [](const PlotSeries& s) { return s.points.isEmpty(); }))
            << panel->export_name().toStdString();
        QFile json(stem + QStringLiteral(".json"));
        ASSERT_TRUE(json.open(QIODevice::ReadOnly));
        const QJsonObject provenance = QJsonDocument::fromJson(json.readAll()).object().value(QStringLiteral("provenance")).toObject();
        EXPECT_EQ(provenance.value(QStringLiteral("fingerprint")).toString(), model.fingerprint);
        EXPECT_EQ(provenance.value(QStringLiteral("backend")).toString(), model.backend);

        QList<QByteArray> rows = inferscope::testing::without_provenance(csv_text).split('\n');
        rows.removeFirst();  // header
        if (!rows.isEmpty() && rows.back().isEmpty()) rows.removeLast();
        QList<QByteArray> expected;
        for (const PlotSeries& series : panel->plot_data().series) {
            for (const QPointF& p : series.points) {
                const QString name = series.name.contains(QLatin1Char(',')) ? QStringLiteral("\"%1\"").arg(series.name) : series.name;
                expected << QStringLiteral("%1,%2,%3").arg(name).arg(p.x(), 0, 'g', 17).arg(p.y(), 0, 'g', 17).toUtf8();
            }
        }
        EXPECT_EQ(rows, expected) << panel->export_name().toStdString();
        // The lab panels stay empty until measured (tests/ui/test_lab_panels.cpp fills them).
        if (panel == &window.latency_panel() || panel == &window.kv_memory_panel()) {
            EXPECT_GT(rows.size(), 8);
        }
        if (panel == &window.batching_lab().throughput_panel()) {
            EXPECT_EQ(rows.size(), 2);  // the point at B = 1 and its standard deviation
        }
        if (panel == &window.batching_lab().replay_panel()) {
            EXPECT_EQ(rows.size(), 2 * 64);  // two policies, 64 requests
        }
    }
}

// Neither a label's text nor a model's name without spaces may widen the window.
TEST(MainWindow, LongTextNeverWidensTheWindow) {
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    const int minimum_before = window.minimumSizeHint().width();
    int wrapped = 0;
    for (QLabel* label : window.findChildren<QLabel*>()) {
        if (!label->wordWrap()) continue;
        label->setText(QString(4000, QLatin1Char('x')));
        ++wrapped;
    }
    window.layout()->activate();
    QCoreApplication::processEvents();
    EXPECT_GT(wrapped, 10);
    EXPECT_EQ(window.minimumSizeHint().width(), minimum_before);

    // The model panel's fields are made anew for each model.
    QTemporaryDir dir;
    GgufWriter model = build_synthetic_model(synthetic_preset("tiny-qwen2"));
    model.set("general.name", GgufValue::string(std::string(4000, 'n')));
    const QString path = dir.filePath(QStringLiteral("long-name.gguf"));
    model.write_file(path.toStdString());
    ASSERT_TRUE(open_and_wait(window, path));
    window.layout()->activate();
    QCoreApplication::processEvents();
    EXPECT_EQ(window.minimumSizeHint().width(), minimum_before);
}

TEST(MainWindow, RestoredGeometryIsFittedIntoTheScreen) {
    const QRect screen(0, 0, 1600, 900);
    // Too wide and off to the right: shrunk to the screen and moved onto it.
    EXPECT_EQ(fit_window_into(QRect(1500, 100, 2600, 800), QSize(1000, 700), screen), QRect(0, 100, 1600, 800));
    // Inside already: unchanged.
    EXPECT_EQ(fit_window_into(QRect(100, 50, 1440, 800), QSize(1000, 700), screen), QRect(100, 50, 1440, 800));
    // Above and left of the screen: moved back onto it.
    EXPECT_EQ(fit_window_into(QRect(-300, -50, 1200, 800), QSize(1000, 700), screen), QRect(0, 0, 1200, 800));
    // A screen smaller than the window's minimum: the minimum, at the screen's corner.
    EXPECT_EQ(fit_window_into(QRect(50, 50, 1440, 880), QSize(1000, 700), QRect(0, 0, 800, 600)), QRect(0, 0, 1000, 700));
}

TEST(ChartExport, ExistingFileIsReplacedWholeOrNotAtAll) {
    MainWindow window;
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("chart.json"));
    {
        QFile old(path);
        ASSERT_TRUE(old.open(QIODevice::WriteOnly));
        old.write("previous contents");
    }
    // A folder that cannot be written: the old file elsewhere is untouched and the error names the path.
    const QString error = export_chart(window.latency_panel(), QStringLiteral("/proc/inferscope/chart.png"), ExportFormat::Png);
    EXPECT_TRUE(error.contains(QLatin1String("/proc/inferscope/chart.png"))) << error.toStdString();
    EXPECT_TRUE(export_chart(window.latency_panel(), path, ExportFormat::Json).isEmpty());
    QFile replaced(path);
    ASSERT_TRUE(replaced.open(QIODevice::ReadOnly));
    EXPECT_TRUE(replaced.readAll().contains("\"series\""));
    EXPECT_EQ(QDir(dir.path()).entryList(QDir::Files).size(), 1);  // no temporary file left behind
}

// A label with a mnemonic ("&Draft:") shows the ampersand literally unless it has a buddy;
// numbers on screen are never in scientific notation.
TEST(MainWindow, LabelsShowNoLiteralAmpersandOrScientificNotation) {
    MainWindow window;
    ASSERT_TRUE(open_and_wait(window, QString()));
    ASSERT_TRUE(generate_and_wait(window, 8));
    const QRegularExpression scientific(QStringLiteral("\\de[+-]\\d\\d"));
    int labels = 0;
    for (const QLabel* label : window.findChildren<QLabel*>()) {
        const QString text = label->text();
        ++labels;
        const bool mnemonic = text.contains(QLatin1Char('&')) && !text.contains(QLatin1String("&&")) &&
                              label->textFormat() != Qt::RichText && !Qt::mightBeRichText(text);
        EXPECT_FALSE(mnemonic && label->buddy() == nullptr) << "label without a buddy: " << text.toStdString();
        EXPECT_FALSE(scientific.match(text).hasMatch()) << "scientific notation: " << text.toStdString();
    }
    EXPECT_GT(labels, 20);
}

// Resident set size of this process, from /proc/self/statm (pages).
double resident_mib() {
    std::ifstream statm("/proc/self/statm");
    long total_pages = 0, resident_pages = 0;
    statm >> total_pages >> resident_pages;
    return static_cast<double>(resident_pages) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / (1024.0 * 1024.0);
}

// A bounded soak: open a model, generate, start a long generation and cancel it, export
// every chart; again with the other built-in model, for INFERSCOPE_SOAK_SECONDS (default: two
// cycles per model). Every cycle's results are checked; each model's resident memory after its first
// and its last cycle is printed (the sanitizer build's LeakSanitizer reports what is lost at exit).
TEST(MainWindowSoak, OpenGenerateCancelExportCycles) {
    const char* seconds_text = std::getenv("INFERSCOPE_SOAK_SECONDS");
    const int soak_ms = seconds_text != nullptr ? std::atoi(seconds_text) * 1000 : 0;
    const QStringList models = {QString(), QStringLiteral("builtin:synthetic")};  // stories260K, then the random model
    MainWindow window;
    int last_generated = 0;
    QObject::connect(&window.controller(), &EngineController::generation_finished,
                     [&](const GenerationReport& r) { last_generated = r.n_generated; });
    int steps = 0;
    QObject::connect(&window.controller(), &EngineController::steps_completed,
                     [&](const QVector<StepRecord>& records) { steps += static_cast<int>(records.size()); });
    QElapsedTimer timer;
    timer.start();
    // Resident memory after each model's first and last cycle: the two models differ in size.
    std::vector<double> first_mib(models.size()), last_mib(models.size());
    int cycles = 0;
    while (cycles < 2 * models.size() || timer.elapsed() < soak_ms) {
        SCOPED_TRACE("cycle " + std::to_string(cycles));
        ASSERT_TRUE(open_and_wait(window, models[cycles % models.size()]));
        ASSERT_TRUE(generate_and_wait(window, 8));
        EXPECT_EQ(last_generated, 8);

        window.generation_panel().set_n_predict(8000);
        steps = 0;
        window.start_generation();
        ASSERT_TRUE(wait_until([&] { return steps >= 3; }, kEngineWaitMs));
        window.stop();
        ASSERT_TRUE(wait_until([&] { return !window.controller().busy(); }, kEngineWaitMs));
        const QString stopped = window.statusBar()->currentMessage();
        EXPECT_TRUE(QRegularExpression(QStringLiteral("^Stopped at [1-9]\\d* of 8000 tokens$")).match(stopped).hasMatch())
            << stopped.toStdString();

        QTemporaryDir dir;
        ASSERT_TRUE(window.export_all_charts(dir.path()).isEmpty());
        EXPECT_FALSE(QDir(dir.path()).entryList(QDir::Files).isEmpty());
        const int model = cycles % static_cast<int>(models.size());
        (cycles < models.size() ? first_mib : last_mib)[model] = resident_mib();
        ++cycles;
    }
    std::printf("[ soak ] %d cycles in %.1f s\n", cycles, static_cast<double>(timer.elapsed()) / 1000.0);
    for (int m = 0; m < models.size(); ++m) {
        const QString name = models[m].isEmpty() ? QStringLiteral("builtin:stories260K") : models[m];
        std::printf("[ soak ] %s: resident %.1f MiB after its first cycle, %.1f MiB after its last (%+.1f MiB)\n",
                    name.toStdString().c_str(), first_mib[m], last_mib[m], last_mib[m] - first_mib[m]);
    }
}

}  // namespace
}  // namespace inferscope::ui
