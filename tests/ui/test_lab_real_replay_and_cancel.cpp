// The batching tab's "Run for real" and every lab's Cancel, on stories260K: the real replay
// serves the replay's trace on the engine (tokens equal to the trace's total, each request's
// greedy output as the engine run directly makes it) and is plotted beside the simulation;
// Cancel ends a running job of the batching and prefill-vs-decode tabs with its handle's
// cancelled signal, no result, a "cancelled" status and a tab that still works.
#include <gtest/gtest.h>

#include <QFile>
#include <QLabel>
#include <QPushButton>
#include <QSlider>
#include <QTemporaryDir>
#include <atomic>

#include "engine/model/model.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/lab_job_recorder.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/lab_measurements.h"
#include "ui/labs/phases_lab.h"
#include "ui/panels/serving_replay_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kLabWaitMs;

QList<QPointF> distribution_points(const ServingReport& report) {
    QList<QPointF> points;
    for (const auto& [x, y] : latency_distribution(report)) points.append(QPointF(x, y));
    return points;
}

class LabRealRunTest : public inferscope::testing::SharedStoriesSuite {};

TEST_F(LabRealRunTest, RunForRealServesTheTraceOnTheEngineBesideTheSimulation) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.set_trace(12, 6, 20, 4);
    lab.set_run_settings(8, 4, {1, 2, 4});
    lab.batch_slider().setValue(4);  // one measured point prices the simulation
    ASSERT_TRUE(wait_until([&] { return rec.result_of(BatchingLab::kReplayJob) != nullptr; }, kLabWaitMs));
    lab.real_replay_button().click();
    EXPECT_TRUE(lab.cancel_button().isEnabled());
    ASSERT_TRUE(
        wait_until([&] { return rec.result_of(BatchingLab::kRealReplayJob) != nullptr || !rec.failures.isEmpty(); }, kLabWaitMs));
    ASSERT_TRUE(rec.failures.isEmpty()) << rec.failures.front().toStdString();
    EXPECT_TRUE(rec.progress_kinds.contains(BatchingLab::kRealReplayJob));
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    const auto& real = std::any_cast<const ReplayResult&>(*rec.result_of(BatchingLab::kRealReplayJob));

    // Every token of the trace was made by the engine, under both policies.
    TraceOptions trace = lab.trace_options();
    trace.vocab_size = direct_model()->config().n_vocab;
    int64_t trace_tokens = 0;
    for (const ServingRequest& r : generate_trace(trace)) trace_tokens += r.max_new_tokens;
    EXPECT_EQ(real.static_run.generated_tokens, trace_tokens);
    EXPECT_EQ(real.continuous_run.generated_tokens, trace_tokens);
    ASSERT_EQ(real.static_run.requests.size(), 12u);
    EXPECT_GT(real.static_run.throughput_tokens_per_s(), 0);
    // The engine run directly serves the same greedy tokens to every request.
    const LabContext direct(direct_model(), 0, std::make_shared<std::atomic<bool>>(false), [](double, const QString&) {});
    const ReplayResult expected = replay_trace_for_real(direct, lab.trace_options(), lab.replay_slots());
    for (size_t i = 0; i < expected.static_run.requests.size(); ++i) {
        EXPECT_EQ(real.static_run.requests[i].output, expected.static_run.requests[i].output) << "request " << i;
        EXPECT_EQ(real.continuous_run.requests[i].output, expected.continuous_run.requests[i].output) << "request " << i;
    }

    // Plotted beside the simulation, labelled.
    const PlotData data = lab.replay_panel().plot_data();
    ASSERT_EQ(data.series.size(), 4);
    EXPECT_EQ(data.series[0].name, QStringLiteral("static batching (simulated)"));
    EXPECT_EQ(data.series[1].name, QStringLiteral("continuous batching (simulated)"));
    EXPECT_EQ(data.series[2].name, QStringLiteral("static batching (real)"));
    EXPECT_EQ(data.series[3].name, QStringLiteral("continuous batching (real)"));
    // Each run's throughput and median under the chart and in the exported title.
    const QString figures = lab.replay_panel().figures();
    EXPECT_TRUE(figures.contains(QStringLiteral("Real: static %1 tok/s, median ").arg(real.static_run.throughput_tokens_per_s(), 0, 'f', 0)))
        << figures.toStdString();
    EXPECT_TRUE(figures.startsWith(QLatin1String("Simulated: static "))) << figures.toStdString();
    EXPECT_TRUE(data.title.endsWith(figures)) << data.title.toStdString();
    EXPECT_EQ(data.series[0].points.size(), 12);
    EXPECT_EQ(QList<QPointF>(data.series[2].points), distribution_points(real.static_run));
    EXPECT_EQ(QList<QPointF>(data.series[3].points), distribution_points(real.continuous_run));

    // The CSV export holds both modes' rows.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("replay.csv"));
    ASSERT_TRUE(export_chart(lab.replay_panel(), path, ExportFormat::Csv).isEmpty());
    QFile csv(path);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QByteArray text = csv.readAll();
    EXPECT_EQ(text.count("static batching (real),"), 12);
    EXPECT_EQ(text.count("continuous batching (simulated),"), 12);

    // Another trace drops the real curves of the old one.
    lab.set_trace(10, 6, 20, 4);
    EXPECT_TRUE(lab.replay_panel().plot_data().series[2].points.isEmpty());
}

TEST_F(LabRealRunTest, CancelEndsTheRealReplayWithNoResultAndTheTabStaysUsable) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.real_replay_button().click();  // the reference 64-request trace
    ASSERT_TRUE(wait_until([&] { return rec.progress_kinds.contains(BatchingLab::kRealReplayJob); }, kLabWaitMs));
    lab.cancel_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.cancelled.isEmpty(); }, kLabWaitMs));
    EXPECT_EQ(rec.cancelled_kinds, QStringList{BatchingLab::kRealReplayJob});
    EXPECT_EQ(rec.result_of(BatchingLab::kRealReplayJob), nullptr);
    EXPECT_TRUE(lab.status().text().contains(QLatin1String("Cancelled"))) << lab.status().text().toStdString();
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    EXPECT_TRUE(lab.replay_panel().plot_data().series[2].points.isEmpty());
    EXPECT_FALSE(c.lab_job_running(BatchingLab::kRealReplayJob));
    // Still usable: a slider move measures its point.
    lab.set_run_settings(8, 4, {1, 2});
    lab.batch_slider().setValue(2);
    ASSERT_TRUE(wait_until([&] { return lab.rows().size() == 1; }, kLabWaitMs));
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(BatchingLab::kReplayJob); }, kLabWaitMs));
}

TEST_F(LabRealRunTest, CancelEndsASweepAndAPointMeasurement) {
    EngineController& c = controller();
    BatchingLab lab(c);
    LabRecorder rec(c);
    lab.set_run_settings(64, 32, {1, 2, 4, 8, 16, 32, 64});
    lab.sweep_button().click();
    lab.batch_slider().setValue(7);
    EXPECT_TRUE(lab.cancel_button().isEnabled());
    lab.cancel_button().click();  // cancels both running jobs
    ASSERT_TRUE(wait_until([&] { return rec.cancelled.size() == 2; }, kLabWaitMs));
    EXPECT_TRUE(rec.cancelled_kinds.contains(BatchingLab::kSweepJob));
    EXPECT_TRUE(rec.cancelled_kinds.contains(BatchingLab::kPointJob));
    EXPECT_EQ(rec.result_of(BatchingLab::kSweepJob), nullptr);
    EXPECT_EQ(rec.result_of(BatchingLab::kPointJob), nullptr);
    EXPECT_TRUE(lab.rows().empty());
    EXPECT_FALSE(lab.sweep_button().text().contains(QLatin1String("Cancel")));
    EXPECT_TRUE(lab.status().text().contains(QLatin1String("Cancelled")));
    EXPECT_FALSE(lab.cancel_button().isEnabled());
}

TEST_F(LabRealRunTest, CancelEndsThePrefillDecodeMeasurement) {
    EngineController& c = controller();
    PhasesLab lab(c);
    LabRecorder rec(c);
    PhasesOptions options;
    options.prompt_lengths = {64, 128, 256, 384, 448};
    options.context_lengths = {64, 128, 256, 384, 448};
    options.repetitions = 5;
    lab.set_options(options);
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    lab.measure_button().click();
    EXPECT_TRUE(lab.cancel_button().isEnabled());
    lab.cancel_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.cancelled.isEmpty(); }, kLabWaitMs));
    EXPECT_EQ(rec.cancelled_kinds, QStringList{PhasesLab::kJob});
    EXPECT_EQ(rec.result_of(PhasesLab::kJob), nullptr);
    EXPECT_TRUE(lab.report().prefill.empty());
    EXPECT_TRUE(lab.status().text().contains(QLatin1String("cancelled"))) << lab.status().text().toStdString();
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    // Still usable: a short measurement delivers.
    options.prompt_lengths = {8};
    options.context_lengths = {8};
    options.repetitions = 1;
    lab.set_options(options);
    lab.measure_button().click();
    ASSERT_TRUE(wait_until([&] { return !lab.report().prefill.empty(); }, kLabWaitMs));
}

}  // namespace
}  // namespace inferscope::ui
