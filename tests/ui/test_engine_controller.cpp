// The controller's request rules: Stop ends a generation within a step, a new request
// replaces the running one (whose results are never shown), and a failed load keeps the
// model that was there.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <QFile>
#include <QTemporaryDir>
#include <cstdint>
#include <vector>

#include "support/lost_gpu_backend.h"
#include "support/raw_gguf.h"
#include "support/test_paths.h"
#include "ui/engine_controller.h"
#include "ui/engine_worker.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

// The count the responsiveness tests rely on sees a worker entry point entered on the UI
// thread, as a direct call instead of a queued one would be.
TEST(EngineWorker, CountsEntryPointsEnteredOnTheUiThread) {
    const std::atomic<quint64> latest_request{1};
    EngineCallCounts calls;
    EngineWorker worker(latest_request, calls);
    worker.set_threads(1, 1);
    EXPECT_EQ(calls.total.load(), 1u);
    EXPECT_EQ(calls.on_ui_thread.load(), 1u);
}

using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;

struct Recorder {
    explicit Recorder(EngineController& c) {
        QObject::connect(&c, &EngineController::model_loaded, [this](const ModelSummary& s) { loaded.push_back(s); });
        QObject::connect(&c, &EngineController::load_failed, [this](const QString&, const QString& m) { failures << m; });
        QObject::connect(&c, &EngineController::generation_started, [this](int, const QString& text) { started << text; });
        QObject::connect(&c, &EngineController::steps_completed, [this](const QVector<StepRecord>& s) { steps += s.size(); });
        QObject::connect(&c, &EngineController::generation_finished, [this](const GenerationReport& r) { reports.push_back(r); });
        QObject::connect(&c, &EngineController::text_generated, [this](const QString& t) { text += t; });
        QObject::connect(&c, &EngineController::load_progress, [this](double, const QString& stage) { stages << stage; });
    }
    std::vector<ModelSummary> loaded;
    QStringList failures;
    QStringList started;
    int steps = 0;
    std::vector<GenerationReport> reports;
    QString text;  // everything generated so far
    QStringList stages;  // of loading, as the progress bar shows them
};

GenerationRequest request(const QString& prompt, int n) {
    GenerationRequest r;
    r.prompt = prompt;
    r.n_predict = n;
    r.sampling.temperature = 0;
    return r;
}

void load_builtin(EngineController& c, Recorder& rec) {
    c.load_model(QString());
    ASSERT_TRUE(wait_until([&] { return !rec.loaded.empty() && !c.busy(); }, kEngineWaitMs));
}

TEST(EngineController, StopEndsAGenerationWithinAStep) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    c.generate(request(QStringLiteral("a long one"), 100000));
    ASSERT_TRUE(wait_until([&] { return rec.steps >= 3; }, kEngineWaitMs));
    c.cancel();
    EXPECT_FALSE(c.busy());  // idle at once from the UI's point of view
    const int steps_at_cancel = rec.steps;
    // the worker stops too: a new generation runs to completion right after
    c.generate(request(QStringLiteral("short"), 4));
    ASSERT_TRUE(wait_until([&] { return !rec.reports.empty() && !c.busy(); }, kEngineWaitMs));
    ASSERT_EQ(rec.reports.size(), 1u);
    EXPECT_EQ(rec.reports.front().n_generated, 4);
    EXPECT_LT(steps_at_cancel, 1000);
}

TEST(EngineController, ANewRequestReplacesTheRunningOne) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    rec.started.clear();
    c.generate(request(QStringLiteral("first"), 100000));
    c.generate(request(QStringLiteral("second"), 6));
    ASSERT_TRUE(wait_until([&] { return !rec.reports.empty() && !c.busy(); }, kEngineWaitMs));
    // Only the second request's results reach the UI.
    EXPECT_EQ(rec.started, QStringList{QStringLiteral("second")});
    ASSERT_EQ(rec.reports.size(), 1u);
    EXPECT_EQ(rec.reports.front().n_generated, 6);
}

TEST(EngineController, FailedLoadKeepsTheModel) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    c.load_model(QStringLiteral("/nonexistent/model.gguf"));
    ASSERT_TRUE(wait_until([&] { return !rec.failures.empty() && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(rec.failures.front().contains(QLatin1String("no such file")));
    EXPECT_TRUE(c.has_model());
    EXPECT_TRUE(c.model().builtin);
    c.generate(request(QStringLiteral("still works"), 3));
    ASSERT_TRUE(wait_until([&] { return !rec.reports.empty() && !c.busy(); }, kEngineWaitMs));
    EXPECT_EQ(rec.reports.front().n_generated, 3);
}

// A FIFO would block open() forever and a tensor of 2^62 elements wraps a byte count: both
// are refused by name, and the loaded model stays usable.
TEST(EngineController, AFifoAndAnImpossibleTensorAreRefusedAndTheModelStays) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    QTemporaryDir dir;
    const QString fifo = dir.filePath(QStringLiteral("model.gguf"));
    ASSERT_EQ(mkfifo(fifo.toLocal8Bit().constData(), 0600), 0);
    c.load_model(fifo);
    ASSERT_TRUE(wait_until([&] { return rec.failures.size() == 1 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(rec.failures.back().contains(QLatin1String("FIFO"))) << rec.failures.back().toStdString();

    const QString huge = dir.filePath(QStringLiteral("huge.gguf"));
    {
        const std::vector<uint8_t> bytes = inferscope::testing::RawGguf().header(1, 0).tensor("w", {uint64_t{1} << 62}, 0, 0).pad().zeros(32).bytes();
        QFile file(huge);
        ASSERT_TRUE(file.open(QIODevice::WriteOnly));
        ASSERT_EQ(file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<qint64>(bytes.size())), static_cast<qint64>(bytes.size()));
    }
    c.load_model(huge);
    ASSERT_TRUE(wait_until([&] { return rec.failures.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(rec.failures.back().contains(QLatin1String("huge.gguf"))) << rec.failures.back().toStdString();
    EXPECT_TRUE(c.has_model());
    EXPECT_TRUE(c.model().builtin);
    c.generate(request(QStringLiteral("still works"), 2));
    ASSERT_TRUE(wait_until([&] { return !rec.reports.empty() && !c.busy(); }, kEngineWaitMs));
    EXPECT_EQ(rec.reports.front().n_generated, 2);
}

TEST(EngineController, CompareRecomputeReportsBothRuns) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    GenerationRequest r = request(QStringLiteral("compare"), 5);
    r.compare_recompute = true;
    c.generate(r);
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_FALSE(rec.reports[0].recompute);
    EXPECT_TRUE(rec.reports[1].recompute);
    EXPECT_EQ(rec.reports[0].n_generated, 5);
    EXPECT_EQ(rec.reports[1].n_generated, 5);
}

TEST(EngineController, ThreadCountRebuildsTheSession) {
    EngineController c;
    Recorder rec(c);
    load_builtin(c, rec);
    c.set_threads(1);
    ASSERT_TRUE(wait_until([&] { return rec.loaded.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(c.model().backend.contains(QLatin1String("(1 thread,"))) << c.model().backend.toStdString();
}

// The Vulkan backend (lavapipe where no GPU exists) generates the CPU's greedy text for the
// same model, and switching back runs on the CPU again; without a usable Vulkan device the
// switch fails with a message and the CPU session stays.
TEST(EngineController, VulkanBackendGeneratesTheCpuText) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    EngineController c;
    Recorder rec(c);
    c.load_model(QString::fromStdString(inferscope::testing::shared_model("stories260K.gguf").string()));
    ASSERT_TRUE(wait_until([&] { return !rec.loaded.empty() && !c.busy(); }, kEngineWaitMs));
    c.generate(request(QStringLiteral("Once upon a time"), 24));
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 1 && !c.busy(); }, kEngineWaitMs));
    const QString cpu_text = rec.text;
    const int cpu_steps = rec.steps;
    EXPECT_FALSE(rec.stages.contains(QStringLiteral("Compiling the GPU's kernels"))) << "the CPU compiles nothing";

    c.set_vulkan(true);
    ASSERT_TRUE(wait_until([&] { return (rec.loaded.size() == 2 || !rec.failures.isEmpty()) && !c.busy(); }, kEngineWaitMs));
    if (!rec.failures.isEmpty()) {
        EXPECT_FALSE(c.model().backend.startsWith(QLatin1String("Vulkan")));
        GTEST_SKIP() << "no usable Vulkan device: " << rec.failures.front().toStdString();
    }
    EXPECT_TRUE(c.model().backend.startsWith(QLatin1String("Vulkan"))) << c.model().backend.toStdString();
    // Its kernels are compiled (the session warmed up) before the first generation times them.
    EXPECT_TRUE(rec.stages.contains(QStringLiteral("Compiling the GPU's kernels"))) << rec.stages.join(u", ").toStdString();
    EXPECT_EQ(rec.stages.back(), QStringLiteral("Ready"));
    rec.text.clear();
    c.generate(request(QStringLiteral("Once upon a time"), 24));
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_FALSE(cpu_text.isEmpty());
    EXPECT_EQ(rec.text, cpu_text);
    EXPECT_EQ(rec.steps, 2 * cpu_steps) << "the warm-up's passes are no steps of the generation";

    c.set_vulkan(false);
    ASSERT_TRUE(wait_until([&] { return rec.loaded.size() == 3 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(c.model().backend.startsWith(QLatin1String("CPU"))) << c.model().backend.toStdString();
}

// A GPU lost in the middle of a generation: the generation fails saying so, the model moves to
// the CPU (model_loaded names it), and the next generation runs there, as a CPU run does.
TEST(EngineController, AGpuLostDuringAGenerationMovesTheModelToTheCpu) {
    EngineController c(nullptr, [](std::shared_ptr<const Model> model) {
        return std::make_unique<inferscope::testing::GpuLostAtPass>(std::move(model), 3);
    });
    Recorder rec(c);
    QStringList generation_failures;
    QObject::connect(&c, &EngineController::generation_failed, [&](const QString& m) { generation_failures << m; });
    load_builtin(c, rec);
    c.generate(request(QStringLiteral("Once upon a time"), 16));
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 1 && !c.busy(); }, kEngineWaitMs));
    const QString cpu_text = rec.text;

    c.set_vulkan(true);
    ASSERT_TRUE(wait_until([&] { return rec.loaded.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(c.model().backend.startsWith(QLatin1String("Vulkan"))) << c.model().backend.toStdString();
    c.generate(request(QStringLiteral("Once upon a time"), 16));
    ASSERT_TRUE(wait_until([&] { return !generation_failures.isEmpty() && !c.busy(); }, kEngineWaitMs));
    EXPECT_EQ(rec.reports.size(), 1u);
    EXPECT_TRUE(generation_failures.front().contains(QLatin1String("device lost"))) << generation_failures.front().toStdString();
    EXPECT_TRUE(generation_failures.front().contains(QLatin1String("now runs on the CPU backend")))
        << generation_failures.front().toStdString();
    ASSERT_EQ(rec.loaded.size(), 3u) << "no model_loaded announced the move";
    EXPECT_TRUE(c.model().backend.startsWith(QLatin1String("CPU"))) << c.model().backend.toStdString();

    rec.text.clear();
    c.generate(request(QStringLiteral("Once upon a time"), 16));
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_FALSE(cpu_text.isEmpty());
    EXPECT_EQ(rec.text, cpu_text);
    EXPECT_EQ(generation_failures.size(), 1);
}

// A GPU lost while a load or a switch to it compiles its kernels (the warm-up's first pass)
// leaves the model loaded on the CPU, saying why, instead of not loaded.
TEST(EngineController, AGpuLostWhileItWarmsUpLeavesTheModelOnTheCpu) {
    EngineController c(nullptr, [](std::shared_ptr<const Model> model) {
        return std::make_unique<inferscope::testing::GpuLostAtPass>(std::move(model), 1, std::vector<int>{16, 1});
    });
    Recorder rec(c);
    const auto expect_on_cpu_saying_why = [&](const ModelSummary& summary) {
        EXPECT_TRUE(summary.backend.startsWith(QLatin1String("CPU"))) << summary.backend.toStdString();
        const QString warnings = summary.load_warnings.join(QLatin1Char('\n'));
        EXPECT_TRUE(warnings.contains(QLatin1String("device lost"))) << warnings.toStdString();
        EXPECT_TRUE(warnings.contains(QLatin1String("runs on the CPU backend"))) << warnings.toStdString();
    };
    c.set_vulkan(true);
    load_builtin(c, rec);
    EXPECT_TRUE(rec.failures.isEmpty()) << rec.failures.join(QLatin1Char('\n')).toStdString();
    expect_on_cpu_saying_why(rec.loaded.back());
    c.generate(request(QStringLiteral("Once upon a time"), 16));
    ASSERT_TRUE(wait_until([&] { return rec.reports.size() == 1 && !c.busy(); }, kEngineWaitMs));
    EXPECT_FALSE(rec.text.isEmpty());

    c.set_vulkan(true);  // chosen again: lost again while it warms up
    ASSERT_TRUE(wait_until([&] { return rec.loaded.size() == 2 && !c.busy(); }, kEngineWaitMs));
    EXPECT_TRUE(rec.failures.isEmpty()) << rec.failures.join(QLatin1Char('\n')).toStdString();
    expect_on_cpu_saying_why(rec.loaded.back());
}

}  // namespace
}  // namespace inferscope::ui
