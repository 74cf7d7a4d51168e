// The quantization tab: moving a control runs analyze_quantization as a lab job and the bars
// are the engine's per-matrix errors for that scheme; a newer setting cancels the running
// analysis; "Measure quality" adds the row the engine's quantize_model + compare_distributions
// + run_battery give; "Generate with these weights" makes the main generation produce
// generate()'s greedy text on quantize_model(...); both charts export.
#include <gtest/gtest.h>

#include <QBarSeries>
#include <QBarSet>
#include <QComboBox>
#include <QFile>
#include <QPushButton>
#include <QSlider>
#include <QStandardItemModel>
#include <QTableWidget>
#include <QTemporaryDir>
#include <memory>

#include "engine/eval/quality.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"
#include "engine/synth/synthetic_model.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/lab_job_recorder.h"
#include "ui/labs/quantization_lab.h"
#include "ui/number_format.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/labs/speculative_lab.h"
#include "ui/panels/quant_panels.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kLabWaitMs;

// One controller with the built-in synthetic model loaded (its rows fit every format), and one
// copy of it for the engine run directly.
class QuantizationLabTest : public inferscope::testing::SharedModelSuite {
protected:
    static void SetUpTestSuite() { load_model(QStringLiteral("builtin:synthetic"), kLabWaitMs); }
    void SetUp() override { ASSERT_TRUE(model_loaded()) << "the built-in model did not load in the controller"; }

    static QuantReport expected_report(const QString& scheme) {
        const QuantScheme schemes[] = {parse_quant_scheme(scheme.toStdString())};
        return analyze_quantization(*direct_model(), schemes, QuantRunOptions{});
    }
    // The lab shown and its analysis of `scheme` delivered.
    static void wait_for_report(const QuantizationLab& lab, const QString& scheme) {
        ASSERT_TRUE(wait_until(
            [&] {
                return lab.report() && lab.report()->schemes.front().scheme.name() == scheme.toStdString() &&
                       !controller().lab_job_running(QuantizationLab::kAnalysisJob);
            },
            kLabWaitMs))
            << "no analysis of " << scheme.toStdString();
    }
};

const PlotSeries& series_named(const PlotData& data, const QString& name) {
    for (const PlotSeries& s : data.series) {
        if (s.name == name) return s;
    }
    throw std::runtime_error("no series " + name.toStdString());
}

// The chart in file order equals the engine's report, bar by bar.
void expect_bars_equal(const QuantErrorPanel& panel, const QuantReport& expected) {
    const PlotData data = panel.plot_data();
    const SchemeSummary& scheme = expected.schemes.front();
    const auto n = static_cast<qsizetype>(expected.matrices.size());
    ASSERT_EQ(data.categories.size(), n);
    const PlotSeries& errors = series_named(data, QStringLiteral("relative error"));
    const PlotSeries& rows = series_named(data, QStringLiteral("rows"));
    const PlotSeries& cols = series_named(data, QStringLiteral("cols"));
    const PlotSeries& bits = series_named(data, QStringLiteral("bits/weight"));
    ASSERT_EQ(errors.points.size(), n);
    for (qsizetype i = 0; i < n; ++i) {
        const auto m = static_cast<size_t>(i);
        EXPECT_EQ(data.categories[i].toStdString(), expected.matrices[m].name);
        EXPECT_EQ(errors.points[i].x(), static_cast<double>(i));
        EXPECT_DOUBLE_EQ(errors.points[i].y(), scheme.matrices[m].error.relative) << expected.matrices[m].name;
        EXPECT_EQ(rows.points[i].y(), static_cast<double>(expected.matrices[m].rows));
        EXPECT_EQ(cols.points[i].y(), static_cast<double>(expected.matrices[m].cols));
        EXPECT_DOUBLE_EQ(bits.points[i].y(), scheme.matrices[m].bits_per_weight);
    }
    EXPECT_TRUE(data.title.contains(QString::fromStdString(scheme.worst_matrix))) << data.title.toStdString();
    EXPECT_TRUE(panel.summary_line().contains(QString::number(bytes_to_mib(scheme.model_bytes), 'f', 2)))
        << panel.summary_line().toStdString();
    EXPECT_TRUE(panel.summary_line().contains(QString::number(scheme.bits_per_weight, 'f', 3)));
}

TEST_F(QuantizationLabTest, MovingTheSliderChartsTheEnginesErrorsForThatScheme) {
    QuantizationLab lab(controller());
    lab.show();
    EXPECT_EQ(lab.scheme_text(), QStringLiteral("int4:row"));
    wait_for_report(lab, QStringLiteral("int4:row"));
    lab.bits_slider().setValue(3);
    EXPECT_EQ(lab.scheme_text(), QStringLiteral("int3:row"));
    wait_for_report(lab, QStringLiteral("int3:row"));
    const QuantReport expected = expected_report(QStringLiteral("int3:row"));
    // Seven projections per layer: 168 bars for Qwen2.5-0.5B's 24 layers, 28 for the built-in 4.
    EXPECT_EQ(expected.matrices.size(), size_t{7} * static_cast<size_t>(direct_model()->config().n_layer));
    expect_bars_equal(lab.error_panel(), expected);

    lab.granularity_box().setCurrentIndex(lab.granularity_box().findData(QStringLiteral("group")));
    wait_for_report(lab, QStringLiteral("int3:g128"));
    expect_bars_equal(lab.error_panel(), expected_report(QStringLiteral("int3:g128")));
    lab.format_box().setCurrentIndex(lab.format_box().findData(QStringLiteral("nf4")));
    lab.group_size_box().setCurrentIndex(lab.group_size_box().findData(QStringLiteral("64")));
    wait_for_report(lab, QStringLiteral("nf4"));  // nf4:64 is spelled "nf4"
    expect_bars_equal(lab.error_panel(), expected_report(QStringLiteral("nf4:64")));
    lab.format_box().setCurrentIndex(lab.format_box().findData(QStringLiteral("q4_k")));
    wait_for_report(lab, QStringLiteral("q4_k"));
    expect_bars_equal(lab.error_panel(), expected_report(QStringLiteral("q4_k")));
}

TEST_F(QuantizationLabTest, SortingByErrorPutsTheHighlightedWorstMatrixFirst) {
    QuantizationLab lab(controller());
    lab.show();
    wait_for_report(lab, lab.scheme_text());
    const QuantErrorPanel& panel = lab.error_panel();
    const std::string worst = lab.report()->schemes.front().worst_matrix;
    EXPECT_EQ(panel.categories()[panel.highlighted_bar()].toStdString(), worst);
    // Drawn grouped by layer, one bar set per matrix kind, the worst matrix's bar selected.
    const int n_layer = direct_model()->config().n_layer;
    ASSERT_EQ(panel.group_labels().size(), n_layer);
    for (int layer = 0; layer < n_layer; ++layer) EXPECT_EQ(panel.group_labels()[layer], QString::number(layer));
    EXPECT_EQ(panel.kinds(), (QStringList{QStringLiteral("attn_q"), QStringLiteral("attn_k"), QStringLiteral("attn_v"),
                                          QStringLiteral("attn_output"), QStringLiteral("ffn_gate"), QStringLiteral("ffn_up"),
                                          QStringLiteral("ffn_down")}));
    const QString worst_layer = QString::fromStdString(worst).section(QLatin1Char('.'), 1, 1);
    const QString worst_kind = QString::fromStdString(worst).section(QLatin1Char('.'), 2, 2);
    const auto* bars = qobject_cast<const QBarSeries*>(panel.chart()->series().front());
    ASSERT_NE(bars, nullptr);
    int selected = 0;
    for (const QBarSet* set : bars->barSets()) {
        for (const int index : set->selectedBars()) {
            ++selected;
            EXPECT_EQ(set->label(), worst_kind);
            EXPECT_EQ(panel.group_labels()[index], worst_layer);
            EXPECT_EQ(set->at(index), lab.report()->schemes.front().worst_relative_error);
        }
    }
    EXPECT_EQ(selected, 1);
    lab.order_box().setCurrentIndex(lab.order_box().findData(QStringLiteral("error")));
    EXPECT_EQ(panel.highlighted_bar(), 0);
    EXPECT_EQ(panel.categories().front().toStdString(), worst);
    EXPECT_EQ(panel.group_labels().front(), worst_layer);  // the worst matrix's layer leads
    const PlotData sorted = panel.plot_data();
    const PlotSeries& errors = series_named(sorted, QStringLiteral("relative error"));
    for (qsizetype i = 1; i < errors.points.size(); ++i) EXPECT_GE(errors.points[i - 1].y(), errors.points[i].y());
}

TEST_F(QuantizationLabTest, ANewerSettingCancelsTheRunningAnalysis) {
    EngineController& c = controller();
    QuantizationLab lab(c);
    lab.show();
    wait_for_report(lab, lab.scheme_text());
    LabRecorder rec(c);
    lab.bits_slider().setValue(8);
    lab.run_now();
    const quint64 stale = lab.analysis_job();
    lab.bits_slider().setValue(2);
    lab.run_now();
    const quint64 current = lab.analysis_job();
    ASSERT_NE(stale, current);
    wait_for_report(lab, QStringLiteral("int2:row"));
    wait_until([] { return false; }, 2 * QuantizationLab::kDebounceMs);  // a debounced rerun would show here
    EXPECT_EQ(rec.finished_ids(QuantizationLab::kAnalysisJob), QList<quint64>{current});
    expect_bars_equal(lab.error_panel(), expected_report(QStringLiteral("int2:row")));
}

// The engine's hook stops the analysis once the job is cancelled: after the first matrix here.
TEST_F(QuantizationLabTest, TheAnalysisStopsAtTheNextMatrixOnceCancelled) {
    auto cancelled = std::make_shared<std::atomic<bool>>(false);
    int progress_calls = 0;
    const LabContext context(direct_model(), 0, cancelled, [&](double, const QString&) {
        ++progress_calls;
        cancelled->store(true);
    });
    EXPECT_THROW(measure_quant_errors(context, parse_quant_scheme("int4:row")), LabJobCancelled);
    EXPECT_EQ(progress_calls, 1);
}

TEST_F(QuantizationLabTest, MeasureQualityAddsTheEnginesNumbers) {
    QuantizationLab lab(controller());
    lab.show();
    wait_for_report(lab, lab.scheme_text());
    lab.measure_button().click();
    ASSERT_TRUE(wait_until([&] { return lab.quality_rows().size() == 1; }, kLabWaitMs));
    const QualityRow& row = lab.quality_rows().front();

    const QuantScheme scheme = parse_quant_scheme(lab.scheme_text().toStdString());
    const QuantizedModel quantized = quantize_model(direct_model(), scheme, QuantRunOptions{});
    const QualitySettings& settings = lab.quality_settings();
    const std::vector<TokenId> tokens = quality_tokens(*direct_model(), settings);
    EXPECT_EQ(tokens.size(), static_cast<size_t>(settings.max_chunks * settings.n_ctx));
    SessionOptions so;
    so.n_ctx = settings.n_ctx;
    InferenceSession reference(direct_model(), so), candidate(quantized.model, so);
    DistributionOptions d;
    d.n_ctx = d.n_batch = settings.n_ctx;
    const DistributionComparison expected = compare_distributions(reference, candidate, tokens, d);
    EXPECT_EQ(row.scheme, scheme.name());
    EXPECT_EQ(row.bits_per_weight, quantized.report.schemes.front().bits_per_weight);
    EXPECT_EQ(row.model_bytes, quantized.report.schemes.front().model_bytes);
    EXPECT_DOUBLE_EQ(row.reference_ppl, expected.reference_ppl);
    EXPECT_DOUBLE_EQ(row.ppl, expected.candidate_ppl);
    EXPECT_DOUBLE_EQ(row.kl_mean, expected.kl_mean);
    EXPECT_DOUBLE_EQ(row.top1_agreement, expected.top1_agreement);
    EXPECT_EQ(row.scored_tokens, expected.n_tokens);
    ASSERT_TRUE(settings.battery.has_value());
    ASSERT_TRUE(row.battery.has_value() && row.reference_battery.has_value());
    EXPECT_EQ(row.battery->passed, run_battery(candidate, *settings.battery, 1.0f).passed);
    EXPECT_EQ(row.reference_battery->passed, run_battery(reference, *settings.battery, 1.0f).passed);
    EXPECT_EQ(row.battery->total, static_cast<int>(settings.battery->items.size()));

    ASSERT_EQ(lab.results_table().rowCount(), 1);
    EXPECT_EQ(lab.results_table().item(0, 0)->text(), lab.scheme_text());
    EXPECT_TRUE(lab.results_table().item(0, 3)->text().startsWith(format_number(expected.candidate_ppl, 5) + QStringLiteral(" ± ")));
    const PlotData data = lab.quality_panel().plot_data();
    EXPECT_DOUBLE_EQ(series_named(data, QStringLiteral("KL mean (nats/token)")).points.at(0).y(), expected.kl_mean);
    EXPECT_DOUBLE_EQ(series_named(data, QStringLiteral("dPPL")).points.at(0).y(),
                     expected.candidate_ppl - expected.reference_ppl);
    EXPECT_EQ(series_named(data, QStringLiteral("battery passed")).points.at(0).y(), row.battery->passed);
}

TEST_F(QuantizationLabTest, CancelStopsTheQualityMeasurementWithoutARow) {
    EngineController& c = controller();
    QuantizationLab lab(c);
    LabRecorder rec(c);
    lab.measure_button().click();
    ASSERT_TRUE(lab.cancel_button().isEnabled());
    lab.cancel_button().click();
    ASSERT_TRUE(wait_until(
        [&] {
            return rec.cancelled_kinds.contains(QuantizationLab::kQualityJob) && !c.lab_job_running(QuantizationLab::kQualityJob);
        },
        kLabWaitMs));
    EXPECT_TRUE(lab.quality_rows().empty());
    EXPECT_EQ(lab.results_table().rowCount(), 0);
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    EXPECT_TRUE(lab.measure_button().isEnabled());
}

struct TextRecorder {
    explicit TextRecorder(EngineController& c) {
        QObject::connect(&c, &EngineController::text_generated, &scope, [this](const QString& t) { text += t; });
        QObject::connect(&c, &EngineController::generation_finished, &scope, [this] { finished = true; });
        QObject::connect(&c, &EngineController::model_loaded, &scope, [this](const ModelSummary& s) { loaded << s.weights; });
    }
    QObject scope;
    QString text;
    bool finished = false;
    QStringList loaded;  // ModelSummary::weights of each model_loaded
};

QString greedy_text(const std::shared_ptr<const Model>& model, const QString& prompt, int n) {
    InferenceSession session(model, SessionOptions{});
    GenerationOptions options;
    options.n_predict = n;
    options.sampling.temperature = 0;
    const GenerationResult result = generate(session, model->tokenizer().encode(prompt.toStdString(), true, true), options);
    std::string bytes;
    for (const TokenId id : result.generated) bytes += model->tokenizer().token_to_piece(id);
    return QString::fromStdString(bytes);
}

QString generate_in_app(EngineController& c, TextRecorder& rec, const QString& prompt, int n) {
    rec.text.clear();
    rec.finished = false;
    GenerationRequest request;
    request.prompt = prompt;
    request.n_predict = n;
    request.sampling.temperature = 0;
    c.generate(request);
    EXPECT_TRUE(wait_until([&] { return rec.finished && !c.busy(); }, kLabWaitMs));
    return rec.text;
}

TEST_F(QuantizationLabTest, GenerateWithTheseWeightsRunsTheQuantizedModel) {
    EngineController& c = controller();
    QuantizationLab lab(c);
    // Two bits with one scale per tensor: coarse enough to change the random model's greedy tokens.
    lab.bits_slider().setValue(2);
    lab.granularity_box().setCurrentIndex(lab.granularity_box().findData(QStringLiteral("tensor")));
    ASSERT_EQ(lab.scheme_text(), QStringLiteral("int2:tensor"));
    TextRecorder rec(c);
    EXPECT_FALSE(lab.restore_button().isEnabled());
    lab.generate_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.loaded.isEmpty() && !c.busy(); }, kLabWaitMs));
    EXPECT_TRUE(rec.loaded.back().contains(QStringLiteral("quantized in memory with int2:tensor")))
        << rec.loaded.back().toStdString();
    EXPECT_EQ(c.model().weights, rec.loaded.back());
    EXPECT_TRUE(lab.restore_button().isEnabled());

    const QString prompt = QStringLiteral("Once upon a time");
    constexpr int kTokens = 24;
    const auto quantized = quantize_model(direct_model(), parse_quant_scheme("int2:tensor"), QuantRunOptions{}).model;
    const QString quantized_text = greedy_text(quantized, prompt, kTokens);
    EXPECT_EQ(generate_in_app(c, rec, prompt, kTokens), quantized_text);
    const QString original_text = greedy_text(direct_model(), prompt, kTokens);
    EXPECT_NE(quantized_text, original_text) << "2-bit weights should change 24 greedy tokens of the built-in model";

    lab.restore_button().click();
    ASSERT_TRUE(wait_until([&] { return rec.loaded.size() == 2 && !c.busy(); }, kLabWaitMs));
    EXPECT_TRUE(rec.loaded.back().isEmpty());
    EXPECT_FALSE(lab.restore_button().isEnabled());
    EXPECT_EQ(generate_in_app(c, rec, prompt, kTokens), original_text);
}

TEST_F(QuantizationLabTest, BothChartsExportThePlottedData) {
    QuantizationLab lab(controller());
    lab.show();
    wait_for_report(lab, lab.scheme_text());
    lab.measure_quality();
    ASSERT_TRUE(wait_until([&] { return lab.quality_rows().size() == 1; }, kLabWaitMs));
    QTemporaryDir dir;
    for (const ChartPanel* panel : lab.panels()) {
        for (const ExportFormat format : {ExportFormat::Png, ExportFormat::Svg, ExportFormat::Csv, ExportFormat::Json}) {
            const QString path = dir.filePath(panel->export_name() + QLatin1Char('.') + export_format_suffix(format));
            ASSERT_TRUE(export_chart(*panel, path, format).isEmpty()) << path.toStdString();
            QFile file(path);
            ASSERT_TRUE(file.open(QIODevice::ReadOnly));
            const QByteArray written = file.readAll();
            EXPECT_GT(written.size(), 100) << path.toStdString();
            if (format == ExportFormat::Csv) {
                EXPECT_EQ(written, plot_data_to_csv(panel->plot_data()));
            } else if (format == ExportFormat::Json) {
                EXPECT_EQ(written, plot_data_to_json(panel->plot_data()));
            }
        }
    }
    // One CSV row per bar and series (relative error, rows, cols, bits/weight), each naming its matrix.
    const QByteArray csv = plot_data_to_csv(lab.error_panel().plot_data());
    EXPECT_EQ(csv.count('\n'), 1 + 4 * static_cast<qsizetype>(lab.report()->matrices.size()));
    EXPECT_TRUE(csv.startsWith("series,"));
    EXPECT_TRUE(csv.contains(QByteArray::fromStdString(lab.report()->matrices.front().name)));
    EXPECT_TRUE(plot_data_to_json(lab.quality_panel().plot_data()).contains(lab.scheme_text().toUtf8()));
}


bool combo_item_enabled(const QComboBox& box, const QString& value) {
    return qobject_cast<QStandardItemModel*>(box.model())->item(box.findData(value))->isEnabled();
}

// stories260K's rows hold 64 and 172 weights: no group size and no GGUF block divides both, so
// the lab offers only what it can run, says why, and switches back when a model fits.
TEST(QuantizationLabChoices, FollowTheLoadedModelsRowLengths) {
    bool loaded = false;
    std::unique_ptr<EngineController> c(inferscope::testing::new_controller_with_model(QString(), kLabWaitMs, loaded));
    ASSERT_TRUE(loaded);
    QuantizationLab lab(*c);
    for (const char* format : {"q8_0", "q4_0", "q4_k", "nf4", "iq4_xs"}) {
        EXPECT_FALSE(combo_item_enabled(lab.format_box(), QString::fromLatin1(format))) << format;
    }
    EXPECT_TRUE(combo_item_enabled(lab.format_box(), QStringLiteral("int")));
    EXPECT_FALSE(combo_item_enabled(lab.granularity_box(), QStringLiteral("group")));
    const QStandardItem* q8 = qobject_cast<QStandardItemModel*>(lab.format_box().model())->item(lab.format_box().findData(QStringLiteral("q8_0")));
    EXPECT_TRUE(q8->toolTip().contains(QLatin1String("rows of 172 weights, not a multiple of 32"))) << q8->toolTip().toStdString();
    EXPECT_EQ(lab.scheme_text(), QStringLiteral("int4:row"));
    // The speculative lab's drafts and the soft-labels lab's students follow the same rows.
    SpeculativeLab speculative(*c);
    SoftLabelsLab soft_labels(*c);
    const auto text_enabled = [](const QComboBox& box, const char* text) {
        return qobject_cast<QStandardItemModel*>(box.model())->item(box.findText(QString::fromLatin1(text)))->isEnabled();
    };
    EXPECT_FALSE(text_enabled(speculative.draft_box(), "q8_0"));
    EXPECT_FALSE(text_enabled(speculative.draft_box(), "int4:g32"));
    EXPECT_TRUE(text_enabled(speculative.draft_box(), "int4:row"));
    EXPECT_FALSE(text_enabled(soft_labels.student_box(), "nf4"));
    EXPECT_TRUE(text_enabled(soft_labels.student_box(), "int8:row"));

    bool synthetic_loaded = false;
    const auto connection = QObject::connect(c.get(), &EngineController::model_loaded, [&] { synthetic_loaded = true; });
    c->load_model(QStringLiteral("builtin:synthetic"));
    ASSERT_TRUE(wait_until([&] { return synthetic_loaded && !c->busy(); }, kLabWaitMs));
    QObject::disconnect(connection);
    for (const char* format : {"q8_0", "q4_k", "nf4"}) EXPECT_TRUE(combo_item_enabled(lab.format_box(), QString::fromLatin1(format))) << format;
    EXPECT_TRUE(combo_item_enabled(lab.granularity_box(), QStringLiteral("group")));
    EXPECT_TRUE(text_enabled(speculative.draft_box(), "q8_0"));
    EXPECT_TRUE(text_enabled(soft_labels.student_box(), "nf4"));
}

}  // namespace
}  // namespace inferscope::ui
