// The lab panels and the lab-job path under them: a control triggers the engine work on the
// worker thread, the chart plots exactly what the engine returned, a newer run of the same
// kind cancels the older one (whose result never shows), and the charts export.
#include <gtest/gtest.h>

#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTableWidget>
#include <QThread>
#include <atomic>
#include <chrono>
#include <thread>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "engine/synth/builtin_models.h"
#include "engine/synth/synthetic_model.h"
#include "ui/engine_controller.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/lab_measurements.h"
#include "ui/labs/outliers_lab.h"
#include "ui/labs/phases_lab.h"
#include "ui/panels/batch_curve_panel.h"
#include "ui/panels/outlier_panels.h"
#include "ui/panels/phases_chart_panel.h"
#include "ui/panels/serving_replay_panel.h"
#include "ui/lab_job_recorder.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;

void load_builtin(EngineController& c) {
    bool loaded = false;
    const auto connection = QObject::connect(&c, &EngineController::model_loaded, [&] { loaded = true; });
    c.load_model(QString());
    ASSERT_TRUE(wait_until([&] { return loaded && !c.busy(); }, kEngineWaitMs));
    QObject::disconnect(connection);
}

LabContext direct_context(std::shared_ptr<const Model> model) {
    return LabContext(std::move(model), 0, std::make_shared<std::atomic<bool>>(false), [](double, const QString&) {});
}

QList<QPointF> series_points(const ChartPanel& panel, int index) { return panel.plot_data().series.at(index).points; }

// Loading the built-in model takes a while: the panel tests share one controller with it
// loaded, and one copy of the model for running the engine directly.
class LabPanelTest : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        controller_ = new EngineController();
        load_builtin(*controller_);
        direct_model_ = load_builtin_model();
    }
    static void TearDownTestSuite() {
        delete controller_;
        controller_ = nullptr;
        direct_model_.reset();
    }
    EngineController& controller() { return *controller_; }
    static const std::shared_ptr<const Model>& direct_model() { return direct_model_; }

private:
    static inline EngineController* controller_ = nullptr;
    static inline std::shared_ptr<const Model> direct_model_;
};

TEST(LabJobs, ANewerJobOfTheSameKindCancelsTheOlder) {
    EngineController c;
    LabRecorder rec(c);
    std::atomic<bool> first_running{false}, first_saw_cancel{false};
    const quint64 first = c.run_lab_job(QStringLiteral("k"), [&](const LabContext& context) {
                               first_running = true;
                               const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
                               while (!context.cancelled() && std::chrono::steady_clock::now() < deadline) {
                                   std::this_thread::sleep_for(std::chrono::milliseconds(1));
                               }
                               first_saw_cancel = context.cancelled();
                               context.throw_if_cancelled();
                               return 1;
                           })->id();
    ASSERT_TRUE(wait_until([&] { return first_running.load(); }, kEngineWaitMs));
    const quint64 other_kind = c.run_lab_job(QStringLiteral("other"), [](const LabContext&) { return 7; })->id();
    auto* second_job = c.run_lab_job(QStringLiteral("k"), [](const LabContext&) { return QStringLiteral("two"); });
    const quint64 second = second_job->id();
    QString second_result;  // read through the typed handle
    second_job->on_finished(&rec.scope, [&](const QString& result) { second_result = result; });
    ASSERT_TRUE(wait_until([&] { return rec.finished.size() == 2; }, kEngineWaitMs));
    EXPECT_TRUE(first_saw_cancel.load());
    EXPECT_TRUE(rec.cancelled.isEmpty());  // the replaced job's signals are dropped
    EXPECT_EQ(rec.finished[0].job, other_kind);
    EXPECT_EQ(std::any_cast<int>(rec.finished[0].result), 7);
    EXPECT_EQ(rec.finished[1].job, second);
    EXPECT_EQ(second_result, QStringLiteral("two"));
    EXPECT_NE(first, second);
    EXPECT_FALSE(c.lab_job_running(QStringLiteral("k")));
}

TEST(LabJobs, CancelStopsAJobAndFailuresNameTheProblem) {
    EngineController c;
    LabRecorder rec(c);
    const quint64 job = c.run_lab_job(QStringLiteral("k"), [](const LabContext& context) {
                             context.progress(0.5, QStringLiteral("half"));
                             while (!context.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
                             context.throw_if_cancelled();
                             return 0;
                         })->id();
    ASSERT_TRUE(wait_until([&] { return !rec.progress.isEmpty(); }, kEngineWaitMs));
    EXPECT_EQ(rec.progress.front(), 0.5);
    c.cancel_lab_job(QStringLiteral("k"));
    ASSERT_TRUE(wait_until([&] { return !rec.cancelled.isEmpty(); }, kEngineWaitMs));
    EXPECT_EQ(rec.cancelled.front(), job);
    // No model is loaded: a job that needs one fails with a message saying so.
    c.run_lab_job(QStringLiteral("k"), [](const LabContext& context) { return measure_batch_sizes(context, BatchRunSettings{}); });
    ASSERT_TRUE(wait_until([&] { return !rec.failures.isEmpty(); }, kEngineWaitMs));
    EXPECT_TRUE(rec.failures.front().contains(QLatin1String("no model is loaded"))) << rec.failures.front().toStdString();
    EXPECT_TRUE(rec.finished.empty());
}

TEST(LabMeasurements, CostModelFromBatchRowsPricesDecodesAndPrompts) {
    BatchBenchRow one, four;
    one.batch = 1;
    one.prompt_tokens = 16;
    one.generate_tokens = 8;
    one.ms_per_step = 2.0;
    one.prefill_s = 0.004;
    four = one;
    four.batch = 4;
    four.ms_per_step = 3.0;
    four.prefill_s = 0.010;
    const StepCostModel costs = cost_model_from_batch_rows({one, four});
    // decode points (1, 2 ms), (4, 3 ms); prompt points (16, 4 ms), (64, 10 ms); context 16 + 8/2
    ASSERT_EQ(costs.points().size(), 4u);
    EXPECT_EQ(costs.points().front().context, 20);
    EXPECT_DOUBLE_EQ(costs.seconds(1, 20), 0.002);
    EXPECT_DOUBLE_EQ(costs.seconds(2, 20), 0.002 + 0.001 / 3.0);
    EXPECT_DOUBLE_EQ(costs.seconds(16, 20), 0.004);
    EXPECT_DOUBLE_EQ(costs.seconds(40, 20), 0.004 + 0.5 * 0.006);
    EXPECT_THROW(cost_model_from_batch_rows({}), InvalidArgument);
    EXPECT_THROW(replay_trace(costs, TraceOptions{}, 0), InvalidArgument);
}

TEST_F(LabPanelTest, BatchingLabMovingTheSliderMeasuresThatBatchSizeAndReplaysTheTrace) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.set_run_settings(8, 4, {1, 2, 4});
    bool replayed = false;
    QObject::connect(&lab, &BatchingLab::replay_changed, [&] { replayed = true; });
    lab.batch_slider().setValue(3);
    ASSERT_TRUE(wait_until([&] { return lab.rows().size() == 1 && replayed; }, kEngineWaitMs));
    ASSERT_TRUE(rec.failures.isEmpty()) << rec.failures.front().toStdString();

    ASSERT_NE(rec.result_of(BatchingLab::kPointJob), nullptr);
    const auto& report = std::any_cast<const BatchBenchReport&>(*rec.result_of(BatchingLab::kPointJob));
    ASSERT_EQ(report.rows.size(), 1u);
    const BatchBenchRow& row = report.rows.front();
    EXPECT_EQ(series_points(lab.throughput_panel(), 0), QList<QPointF>{QPointF(3, row.decode_tokens_per_s)});
    EXPECT_EQ(series_points(lab.step_panel(), 0), QList<QPointF>{QPointF(3, row.ms_per_step)});

    // The engine, run directly with the same parameters, measures the same configuration.
    BatchRunSettings same;
    same.batch_sizes = {3};
    same.prompt_tokens = 8;
    same.generate_tokens = 4;
    const BatchBenchReport direct = measure_batch_sizes(direct_context(direct_model()), same);
    ASSERT_EQ(direct.rows.size(), 1u);
    EXPECT_EQ(row.batch, direct.rows.front().batch);
    EXPECT_EQ(row.kv_tokens, direct.rows.front().kv_tokens);  // 3 x (8 + 4)
    EXPECT_EQ(row.kv_tokens, 36);
    EXPECT_GT(row.decode_tokens_per_s, 0);

    // The replay chart is the engine's simulation with the cost model of the measured rows.
    const ReplayResult expected = replay_trace(cost_model_from_batch_rows(lab.rows()), lab.trace_options(), lab.replay_slots());
    QList<QPointF> expected_static, expected_continuous;
    for (const auto& [x, y] : latency_distribution(expected.static_run)) expected_static.append(QPointF(x, y));
    for (const auto& [x, y] : latency_distribution(expected.continuous_run)) expected_continuous.append(QPointF(x, y));
    EXPECT_EQ(series_points(lab.replay_panel(), 0), expected_static);
    EXPECT_EQ(series_points(lab.replay_panel(), 1), expected_continuous);
    EXPECT_EQ(expected_static.size(), 64);  // the reference request trace: 64 requests
}

TEST_F(LabPanelTest, BatchingLabAStaleSliderRunIsCancelled) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.set_run_settings(8, 4, {1, 2});
    lab.batch_slider().setValue(2);
    lab.batch_slider().setValue(5);
    ASSERT_TRUE(wait_until([&] { return !lab.rows().empty(); }, kEngineWaitMs));
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(BatchingLab::kPointJob); }, kEngineWaitMs));
    ASSERT_EQ(lab.rows().size(), 1u);
    EXPECT_EQ(lab.rows().front().batch, 5);
    int point_results = 0;
    for (const auto& f : rec.finished) point_results += f.kind == BatchingLab::kPointJob ? 1 : 0;
    EXPECT_EQ(point_results, 1);
}

TEST_F(LabPanelTest, BatchingLabSweepMeasuresTheCurveWithProgressAndMarksTheKnee) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.set_run_settings(8, 4, {1, 2, 4, 8});
    lab.sweep_button().click();
    ASSERT_TRUE(wait_until([&] { return lab.rows().size() == 4; }, kEngineWaitMs));
    ASSERT_NE(rec.result_of(BatchingLab::kSweepJob), nullptr);
    const auto* sweep = &std::any_cast<const BatchBenchReport&>(*rec.result_of(BatchingLab::kSweepJob));
    EXPECT_EQ(rec.progress_kinds.count(BatchingLab::kSweepJob), 4);  // one report per batch size
    QList<QPointF> throughput, step;
    for (const BatchBenchRow& r : sweep->rows) {
        throughput.append(QPointF(r.batch, r.decode_tokens_per_s));
        step.append(QPointF(r.batch, r.ms_per_step));
    }
    EXPECT_EQ(series_points(lab.throughput_panel(), 0), throughput);
    EXPECT_EQ(series_points(lab.step_panel(), 0), step);
    EXPECT_EQ(lab.knee_batch(), sweep->knee_batch);  // the engine's knee over the same rows
    const QList<QPointF> knee = series_points(lab.throughput_panel(), 1);
    if (sweep->knee_batch > 0) {
        ASSERT_EQ(knee.size(), 1);
        EXPECT_EQ(knee.front().x(), sweep->knee_batch);
        EXPECT_TRUE(lab.knee_text().contains(QStringLiteral("B = %1").arg(sweep->knee_batch)));
    } else {
        EXPECT_TRUE(knee.isEmpty());
        EXPECT_TRUE(lab.knee_text().contains(QLatin1String("No knee")));
    }
}

TEST_F(LabPanelTest, BatchingLabSweepButtonCancelsARunningSweep) {
    EngineController& c = controller();
    LabRecorder rec(c);
    BatchingLab lab(c);
    lab.set_run_settings(64, 32, {1, 2, 4, 8, 16, 32, 64});
    lab.sweep_button().click();
    EXPECT_TRUE(lab.sweep_button().text().contains(QLatin1String("Cancel")));
    lab.sweep_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.cancelled.isEmpty(); }, kEngineWaitMs));
    EXPECT_EQ(rec.result_of(BatchingLab::kSweepJob), nullptr);
    EXPECT_TRUE(lab.rows().empty());
    EXPECT_FALSE(lab.sweep_button().text().contains(QLatin1String("Cancel")));
}

TEST_F(LabPanelTest, PhasesLabOneClickMeasuresBothTables) {
    EngineController& c = controller();
    PhasesLab lab(c);
    LabRecorder rec(c);
    PhasesOptions options;
    options.prompt_lengths = {8, 32, 4096};  // 4096 is beyond the built-in model's 2048 tokens: left out
    options.context_lengths = {8, 32, 16};
    options.decode_steps = 2;
    options.repetitions = 1;
    lab.set_options(options);
    lab.measure_button().click();
    ASSERT_TRUE(wait_until([&] { return !lab.report().prefill.empty(); }, kEngineWaitMs));
    ASSERT_TRUE(rec.failures.isEmpty()) << rec.failures.front().toStdString();
    ASSERT_NE(rec.result_of(PhasesLab::kJob), nullptr);
    const auto& report = std::any_cast<const PhasesReport&>(*rec.result_of(PhasesLab::kJob));
    ASSERT_EQ(report.prefill.size(), 2u);
    ASSERT_EQ(report.decode.size(), 2u);
    EXPECT_EQ(report.prefill[1].n_prompt, 32);
    EXPECT_EQ(report.decode[1].context, 32);
    const QList<QPointF> prefill = series_points(lab.chart_panel(), 0);
    const QList<QPointF> decode = series_points(lab.chart_panel(), 1);
    ASSERT_EQ(prefill.size(), 2);
    ASSERT_EQ(decode.size(), 2);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(prefill[i], QPointF(report.prefill[i].n_prompt, report.prefill[i].ms_per_token));
        EXPECT_EQ(decode[i], QPointF(report.decode[i].context, report.decode[i].step_ms));
        EXPECT_EQ(lab.table().item(i, 1)->text(), QString::number(report.prefill[i].total_ms, 'f', 2));
        EXPECT_EQ(lab.table().item(i, 4)->text(), QString::number(report.decode[i].step_ms, 'f', 3));
        // Speeds as mean ± standard deviation of the repetitions (one here: no spread).
        EXPECT_TRUE(lab.table().item(i, 3)->text().startsWith(QString::number(report.prefill[i].tokens_per_s, 'f', 1) + QStringLiteral(" ± 0.0")))
            << lab.table().item(i, 3)->text().toStdString();
        EXPECT_TRUE(lab.table().item(i, 5)->text().startsWith(QString::number(report.decode[i].tokens_per_s, 'f', 1) + QStringLiteral(" ± 0.0")));
    }
    EXPECT_EQ(lab.repeats_box().value(), 1);  // set_options shows its repetitions
    // The engine's own tables for the same lengths have the same rows.
    PhasesOptions fitting = options;
    fitting.prompt_lengths = {8, 32};
    fitting.context_lengths = {8, 32};
    SessionOptions so;
    so.n_ctx = phases_context_needed(fitting);
    InferenceSession session(direct_model(), so);
    const PhasesReport direct = measure_phases(session, fitting);
    ASSERT_EQ(direct.prefill.size(), 2u);
    EXPECT_EQ(direct.prefill[0].n_prompt, report.prefill[0].n_prompt);
    EXPECT_EQ(direct.decode[1].context, report.decode[1].context);
}

// One bar per octave: (bin index, dimensions in it).
QList<QPointF> histogram_points(const LayerOutlierSummary& layer) {
    QList<QPointF> points;
    for (size_t i = 0; i < layer.histogram.size(); ++i) points.append(QPointF(static_cast<double>(i), static_cast<double>(layer.histogram[i].count)));
    return points;
}

QList<QPointF> maxima_points(const LayerOutlierSummary& layer) {
    QList<QPointF> points;
    for (size_t dim = 0; dim < layer.dim_max_abs.size(); ++dim) points.append(QPointF(dim, layer.dim_max_abs[dim]));
    return points;
}

TEST_F(LabPanelTest, OutliersLabAnalysesThePromptForTheChosenLayer) {
    EngineController& c = controller();
    LabRecorder rec(c);
    OutliersLab lab(c);
    lab.show();
    const QString prompt = QStringLiteral("The quick brown fox jumps over the lazy dog");
    lab.layer_slider().setValue(1);
    lab.set_prompt(prompt);
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == prompt && lab.report()->int8_layer == 1; }, kEngineWaitMs));
    ASSERT_TRUE(rec.failures.isEmpty()) << rec.failures.front().toStdString();

    // The engine, run directly on the same tokens with the same options.
    const std::vector<TokenId> tokens = direct_model()->tokenizer().encode(prompt.toStdString(), true, true);
    SessionOptions so;
    so.n_ctx = static_cast<int>(tokens.size());
    InferenceSession session(direct_model(), so);
    const OutlierReport expected = analyze_outliers(session, tokens, lab.analysis_options());
    ASSERT_EQ(expected.layers.size(), static_cast<size_t>(direct_model()->config().n_layer));
    EXPECT_EQ(series_points(lab.histogram_panel(), 0), histogram_points(expected.layers[1]));
    const QStringList bins = lab.histogram_panel().plot_data().categories;
    ASSERT_EQ(bins.size(), static_cast<int>(expected.layers[1].histogram.size()));
    EXPECT_EQ(bins.front(), QStringLiteral("0\u20131"));
    if (bins.size() > 2) {
        EXPECT_EQ(bins[2], QStringLiteral("2–4"));
    }
    EXPECT_EQ(series_points(lab.maxima_panel(), 0), maxima_points(expected.layers[1]));
    QList<QPointF> top;
    for (const DimensionValue& t : expected.layers[1].top) top.append(QPointF(t.dim, t.value));
    EXPECT_EQ(series_points(lab.maxima_panel(), 1), top);
    EXPECT_EQ(top.size(), OutliersLab::kTopDimensions);
    ASSERT_EQ(lab.int8_table().rowCount(), static_cast<int>(expected.int8.schemes.size()));
    for (int i = 0; i < lab.int8_table().rowCount(); ++i) {
        const Int8SchemeResult& scheme = expected.int8.schemes[static_cast<size_t>(i)];
        EXPECT_EQ(lab.int8_table().item(i, 1)->text(), QString::number(100.0 * scheme.relative_error, 'f', 3));
        EXPECT_EQ(lab.int8_table().item(i, 3)->text(), QString::number(scheme.median_levels_used, 'f', 1));
    }
    // Another layer's charts come from the report at once (its INT8 table follows).
    lab.layer_slider().setValue(2);
    EXPECT_EQ(series_points(lab.histogram_panel(), 0), histogram_points(expected.layers[2]));
    ASSERT_TRUE(wait_until([&] { return lab.report()->int8_layer == 2; }, kEngineWaitMs));
}

TEST_F(LabPanelTest, OutliersLabCancelsTheAnalysisOfAnOlderPrompt) {
    EngineController& c = controller();
    OutliersLab lab(c);
    lab.show();
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(OutliersLab::kJob); }, kEngineWaitMs));
    LabRecorder rec(c);
    lab.set_prompt(QStringLiteral("an older prompt that the user kept typing after"));
    lab.run_now();
    const QString newer = QStringLiteral("a newer prompt");
    lab.set_prompt(newer);
    lab.run_now();
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == newer; }, kEngineWaitMs));
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(OutliersLab::kJob); }, kEngineWaitMs));
    int results = 0;
    for (const auto& f : rec.finished) results += f.kind == OutliersLab::kJob ? 1 : 0;
    EXPECT_EQ(results, 1);
    EXPECT_EQ(lab.report()->n_tokens,
              static_cast<int64_t>(direct_model()->tokenizer().encode(newer.toStdString(), true, true).size()));
}

}  // namespace
}  // namespace inferscope::ui
