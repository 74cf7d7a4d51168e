// The outliers tab's heat strip: after the lab analyses the prompt, its matrix (dimension,
// layer, max |h|) is the probe analysis run directly on the same tokens, its rows the
// dimensions with the largest maxima over every layer; it exports, and joins the window's
// export-all. Also the prompt following the labs share: nothing runs while the tab is hidden,
// and showing it catches up.
#include <gtest/gtest.h>

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QXYSeries>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "engine/synth/builtin_models.h"
#include "engine/synth/synthetic_model.h"
#include "support/test_paths.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/lab_job_recorder.h"
#include "ui/labs/outliers_lab.h"
#include "ui/main_window.h"
#include "ui/number_format.h"
#include "ui/panels/outlier_panels.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;
const QString kHeatStripPrompt = QStringLiteral("Once upon a time there was a little girl who loved the sea");

// `path` empty: the built-in model.
bool load(EngineController& c, const QString& path) {
    bool loaded = false, failed = false;
    const auto a = QObject::connect(&c, &EngineController::model_loaded, [&] { loaded = true; });
    const auto b = QObject::connect(&c, &EngineController::load_failed, [&] { failed = true; });
    c.load_model(path);
    wait_until([&] { return (loaded || failed) && !c.busy(); }, kEngineWaitMs);
    QObject::disconnect(a);
    QObject::disconnect(b);
    return loaded;
}

// The lab shown, `prompt` analysed.
void analyse(OutliersLab& lab, const QString& prompt) {
    lab.show();
    lab.set_prompt(prompt);
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == prompt && lab.report().has_value(); }, kEngineWaitMs));
}

// Each dimension's largest max |h| over the layers, ranked here (largest first, ties by lower
// dimension) without the engine's ranking helper.
std::vector<int> ranked_dimensions(const OutlierReport& report, size_t count) {
    const size_t width = report.layers.front().dim_max_abs.size();
    std::vector<float> largest(width, 0.0f);
    for (const LayerOutlierSummary& layer : report.layers) {
        for (size_t d = 0; d < width; ++d) largest[d] = std::max(largest[d], layer.dim_max_abs[d]);
    }
    std::vector<int> dims(width);
    std::iota(dims.begin(), dims.end(), 0);
    std::stable_sort(dims.begin(), dims.end(), [&](int a, int b) { return largest[static_cast<size_t>(a)] > largest[static_cast<size_t>(b)]; });
    dims.resize(std::min(count, width));
    return dims;
}

void expect_strip_is_the_analysis(const OutliersLab& lab, const std::shared_ptr<const Model>& model, const QString& prompt) {
    const std::vector<TokenId> tokens = model->tokenizer().encode(prompt.toStdString(), true, true);
    SessionOptions so;
    so.n_ctx = static_cast<int>(tokens.size());
    InferenceSession session(model, so);
    const OutlierReport expected = analyze_outliers(session, tokens, lab.analysis_options());
    const std::vector<int> dims = ranked_dimensions(expected, OutlierHeatStripPanel::kDimensions);

    const PlotData data = lab.heat_strip_panel().plot_data();
    ASSERT_EQ(data.series.size(), static_cast<qsizetype>(dims.size()));
    EXPECT_EQ(data.x_label, QStringLiteral("layer (block)"));
    for (size_t row = 0; row < dims.size(); ++row) {
        const PlotSeries& series = data.series[static_cast<qsizetype>(row)];
        EXPECT_EQ(series.name, QStringLiteral("dim %1").arg(dims[row])) << "row " << row;
        ASSERT_EQ(series.points.size(), static_cast<qsizetype>(expected.layers.size()));
        for (size_t layer = 0; layer < expected.layers.size(); ++layer) {
            const QPointF& p = series.points[static_cast<qsizetype>(layer)];
            EXPECT_EQ(p.x(), static_cast<double>(layer));
            EXPECT_EQ(p.y(), static_cast<double>(expected.layers[layer].dim_max_abs[static_cast<size_t>(dims[row])]))
                << "dim " << dims[row] << ", layer " << layer;
        }
    }
    // The colour bar names the largest and smallest max |h| of the matrix at its ends
    // (values at or below the scale's floor of 2^-24 share it).
    double low = std::numeric_limits<double>::max(), high = 0;
    for (const PlotSeries& series : data.series) {
        for (const QPointF& p : series.points) {
            low = std::min(low, std::max(p.y(), std::exp2(-24.0)));
            high = std::max(high, p.y());
        }
    }
    EXPECT_EQ(lab.heat_strip_panel().colour_bar_labels(), (QStringList{format_number(high, 3), format_number(low, 3)}));
    // The chart draws one cell per (dimension, layer) at (layer, row).
    ASSERT_EQ(lab.heat_strip_panel().chart()->series().size(), 1);
    const auto* cells = qobject_cast<const QXYSeries*>(lab.heat_strip_panel().chart()->series().front());
    ASSERT_NE(cells, nullptr);
    EXPECT_EQ(cells->count(), static_cast<int>(dims.size() * expected.layers.size()));
}

TEST(OutlierHeatStrip, IsTheProbeAnalysisOfTheBuiltInModels) {
    EngineController c;
    ASSERT_TRUE(load(c, QString()));
    OutliersLab lab(c);
    analyse(lab, kHeatStripPrompt);
    expect_strip_is_the_analysis(lab, load_builtin_model(BuiltinModel::Stories260K), kHeatStripPrompt);
    EXPECT_EQ(lab.heat_strip_panel().dimensions().size(), static_cast<size_t>(OutlierHeatStripPanel::kDimensions));

    ASSERT_TRUE(load(c, QStringLiteral("builtin:synthetic")));
    analyse(lab, QStringLiteral("A different prompt, so the lab analyses again"));
    expect_strip_is_the_analysis(lab, load_builtin_model(BuiltinModel::Synthetic),
                                 QStringLiteral("A different prompt, so the lab analyses again"));
    EXPECT_EQ(lab.heat_strip_panel().dimensions().size(), static_cast<size_t>(OutlierHeatStripPanel::kDimensions));
}

TEST(OutlierHeatStrip, IsTheProbeAnalysisOfStories260K) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const QString path = inferscope::testing::shared_model_path("stories260K.gguf");
    EngineController c;
    ASSERT_TRUE(load(c, path));
    OutliersLab lab(c);
    analyse(lab, kHeatStripPrompt);
    expect_strip_is_the_analysis(lab, Model::load(path.toStdString()), kHeatStripPrompt);
}

TEST(OutlierHeatStrip, ExportsTheMatrixAndJoinsExportAll) {
    MainWindow window(false);
    QStringList names;
    for (const ChartPanel* panel : window.chart_panels()) names << panel->export_name();
    EXPECT_TRUE(names.contains(QStringLiteral("outlier-heat-strip"))) << names.join(QLatin1Char(',')).toStdString();
    EXPECT_TRUE(names.contains(QStringLiteral("soft-labels-student")));

    ASSERT_TRUE(load(window.controller(), QString()));
    OutliersLab& lab = window.outliers_lab();
    // The window is not shown (nor its tab): the analysis is started by hand, as --measure-labs does.
    lab.set_prompt(kHeatStripPrompt);
    lab.run_now();
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == kHeatStripPrompt; }, kEngineWaitMs));
    const OutlierHeatStripPanel& strip = lab.heat_strip_panel();
    QTemporaryDir dir;
    const QString csv_path = dir.filePath(QStringLiteral("strip.csv"));
    ASSERT_TRUE(export_chart(strip, csv_path, ExportFormat::Csv).isEmpty());
    QFile csv(csv_path);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QByteArray csv_text = csv.readAll();
    EXPECT_EQ(csv_text, plot_data_to_csv(strip.plot_data()));
    // The header, then one row per (dimension, layer).
    EXPECT_EQ(csv_text.count('\n'), 1 + OutlierHeatStripPanel::kDimensions * window.controller().model().config.n_layer);
    EXPECT_TRUE(csv_text.startsWith("series,layer (block),max |h| over the prompt's tokens\n"));
    const QString json_path = dir.filePath(QStringLiteral("strip.json"));
    ASSERT_TRUE(export_chart(strip, json_path, ExportFormat::Json).isEmpty());
    QFile json(json_path);
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    EXPECT_EQ(json.readAll(), plot_data_to_json(strip.plot_data()));

    const QString all = dir.filePath(QStringLiteral("all"));
    ASSERT_TRUE(window.export_all_charts(all).isEmpty());
    for (const char* suffix : {".png", ".svg", ".csv", ".json"}) {
        const QString file = QDir(all).filePath(QStringLiteral("outlier-heat-strip") + QLatin1String(suffix));
        EXPECT_GT(QFileInfo(file).size(), 0) << file.toStdString();
    }
    QFile exported(QDir(all).filePath(QStringLiteral("outlier-heat-strip.csv")));
    ASSERT_TRUE(exported.open(QIODevice::ReadOnly));
    const QByteArray exported_text = exported.readAll();
    EXPECT_TRUE(exported_text.startsWith("# chart: ")) << exported_text.left(200).toStdString();
    EXPECT_EQ(inferscope::testing::without_provenance(exported_text), csv_text);
}

TEST(PromptFollowing, WaitsWhileTheTabIsHiddenAndCatchesUpWhenShown) {
    EngineController c;
    ASSERT_TRUE(load(c, QString()));
    LabRecorder rec(c);
    OutliersLab lab(c);
    lab.set_prompt(kHeatStripPrompt);
    wait_until([] { return false; }, 3 * OutliersLab::kDebounceMs);
    EXPECT_EQ(rec.finished_count(OutliersLab::kJob), 0);
    EXPECT_FALSE(c.lab_job_running(OutliersLab::kJob));
    EXPECT_TRUE(lab.analysed_prompt().isEmpty());
    lab.show();
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == kHeatStripPrompt; }, kEngineWaitMs));
    EXPECT_EQ(rec.finished_count(OutliersLab::kJob), 1);
    // Shown again with nothing changed: the result is current, no new run.
    lab.hide();
    lab.show();
    wait_until([] { return false; }, 3 * OutliersLab::kDebounceMs);
    EXPECT_EQ(rec.finished_count(OutliersLab::kJob), 1);
}

}  // namespace
}  // namespace inferscope::ui
