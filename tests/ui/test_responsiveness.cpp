// The UI thread never waits on inference: while a model loads and generates and the panels
// measure, every call into the engine worker runs on its thread (asserted). A 5 ms timer on the UI
// thread measures the largest gap between two ticks, the event-loop latency a user would
// feel; it is reported, not asserted, since it depends on the machine's load.
#include <gtest/gtest.h>

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTest>
#include <QTimer>
#include <algorithm>

#include "engine/synth/synthetic_model.h"
#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/outliers_lab.h"
#include "ui/labs/quantization_lab.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/labs/speculative_lab.h"
#include "ui/main_window.h"
#include "ui/panels/serving_replay_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

constexpr int kTickMs = 5;
constexpr int kResponsivenessWaitMs = 300000;

// Watches the UI thread while engine work runs: the largest gap between ticks of a timer,
// and the calls into the engine worker made meanwhile.
class GapMeter {
public:
    explicit GapMeter(const EngineController& controller)
        : controller_(controller), calls_before_(controller.engine_calls().total.load()) {
        timer_.setInterval(kTickMs);
        QObject::connect(&timer_, &QTimer::timeout, [this] {
            const qint64 now = clock_.elapsed();
            max_gap_ = std::max(max_gap_, now - last_);
            last_ = now;
            ++ticks_;
        });
        clock_.start();
        timer_.start();
    }
    qint64 max_gap_ms() const { return max_gap_; }

    // The event loop ran, engine work happened, and none of it on the UI thread.
    void expect_work_off_the_ui_thread() const {
        EXPECT_GT(ticks_, 10);
        EXPECT_GT(controller_.engine_calls().total.load(), calls_before_);
        EXPECT_EQ(controller_.engine_calls().on_ui_thread.load(), 0u);
    }

private:
    const EngineController& controller_;
    const quint64 calls_before_;
    QTimer timer_;
    QElapsedTimer clock_;
    qint64 last_ = 0;
    qint64 max_gap_ = 0;
    int ticks_ = 0;
};

// Loads `path` and generates `tokens` tokens with the window on screen, measuring the
// largest event-loop gap over the whole run.
qint64 max_gap_while_loading_and_generating(const QString& path, int tokens) {
    MainWindow window;
    window.show();
    // The first paint (fonts, chart layout) is the window starting up, not the engine: let
    // it happen before measuring.
    EXPECT_TRUE(QTest::qWaitForWindowExposed(&window));
    QTest::qWait(200);
    bool loaded = false, finished = false;
    QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    QObject::connect(&window.controller(), &EngineController::generation_finished, [&] { finished = true; });
    GapMeter meter(window.controller());
    window.open_model(path);
    EXPECT_TRUE(wait_until([&] { return loaded && !window.controller().busy(); }, kResponsivenessWaitMs));
    std::printf("[ measured ] largest gap while loading: %lld ms\n", static_cast<long long>(meter.max_gap_ms()));
    window.generation_panel().set_n_predict(tokens);
    window.start_generation();
    EXPECT_TRUE(wait_until([&] { return finished && !window.controller().busy(); }, kResponsivenessWaitMs));
    meter.expect_work_off_the_ui_thread();
    return meter.max_gap_ms();
}

TEST(Responsiveness, EventLoopStaysLiveOnStories260K) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const qint64 gap = max_gap_while_loading_and_generating(inferscope::testing::shared_model_path("stories260K.gguf"), 400);
    std::printf("[ measured ] stories260K: largest event-loop gap %lld ms\n", static_cast<long long>(gap));
}

// A model of Qwen2.5-0.5B's shape (494 M parameters, F16, about 1 GB), generated once and
// kept in the temporary folder between runs.
QString qwen_shaped_model() {
    const QString path = QDir::temp().filePath(QStringLiteral("inferscope-test-qwen2.5-0.5b-shape-f16-seed1.gguf"));
    SyntheticModelSpec spec = synthetic_preset("qwen2.5-0.5b");
    spec.dtype = GgmlType::F16;
    const GgufWriter writer = build_synthetic_model(spec);
    const qint64 expected_size = static_cast<qint64>(writer.to_bytes().size());
    if (QFileInfo(path).size() != expected_size) writer.write_file(path.toStdString());
    return path;
}

TEST(Responsiveness, EventLoopStaysLiveOnA05BShapedModel) {
    const qint64 gap = max_gap_while_loading_and_generating(qwen_shaped_model(), 2);
    std::printf("[ measured ] 0.5B-shaped F16 model: largest event-loop gap %lld ms\n", static_cast<long long>(gap));
}

// Shows `window` and loads the built-in model into it (a fatal failure when it does not load).
void show_with_builtin_model(MainWindow& window) {
    window.show();
    EXPECT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool loaded = false;
    const auto connection = QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    window.open_model(QString());
    const bool ready = wait_until([&] { return loaded && !window.controller().busy(); }, kResponsivenessWaitMs);
    QObject::disconnect(connection);  // `loaded` ends with this function
    ASSERT_TRUE(ready);
}

// Dragging the batch-size slider queues a batched decode per position, a sweep runs the
// whole curve, and typing re-analyses the activations: all of it on the worker thread,
// stale runs cancelled.
TEST(Responsiveness, EventLoopStaysLiveWhileLabPanelsMeasure) {
    MainWindow window;
    show_with_builtin_model(window);
    if (::testing::Test::HasFatalFailure()) return;
    BatchingLab& lab = window.batching_lab();
    window.show_tab(&lab);
    lab.set_run_settings(8, 4, {1, 2, 4, 8, 16});
    QTest::qWait(200);
    GapMeter meter(window.controller());
    for (int batch = 2; batch <= 16; ++batch) {
        lab.batch_slider().setValue(batch);
        QTest::qWait(10);
    }
    ASSERT_TRUE(wait_until([&] { return !lab.rows().empty() && lab.rows().back().batch == 16; }, kResponsivenessWaitMs));
    lab.sweep_button().click();
    ASSERT_TRUE(wait_until([&] { return lab.rows().size() == 5 && !window.controller().lab_job_running(BatchingLab::kSweepJob); },
                           kResponsivenessWaitMs));
    // Typing in the prompt re-analyses the activations (debounced, stale runs cancelled).
    OutliersLab& outliers = window.outliers_lab();
    window.show_tab(&outliers);
    window.generation_panel().prompt_edit()->clear();
    QTest::keyClicks(window.generation_panel().prompt_edit(), QStringLiteral("Outliers appear as you type"), Qt::NoModifier, 20);
    ASSERT_TRUE(wait_until([&] { return outliers.analysed_prompt() == QStringLiteral("Outliers appear as you type"); },
                           kResponsivenessWaitMs));
    std::printf("[ measured ] batch slider drag, sweep and typing: largest event-loop gap %lld ms\n",
                static_cast<long long>(meter.max_gap_ms()));
    meter.expect_work_off_the_ui_thread();
}

// Measuring speculative decoding and serving the replay's trace for real report progress
// every token and step (hundreds per second on stories260K): the UI thread only redraws.
TEST(Responsiveness, EventLoopStaysLiveWhileSpeculativeRunsAndRealReplaysMeasure) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    MainWindow window;
    window.show();
    ASSERT_TRUE(QTest::qWaitForWindowExposed(&window));
    bool loaded = false;
    QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    window.open_model(inferscope::testing::shared_model_path("stories260K.gguf"));
    ASSERT_TRUE(wait_until([&] { return loaded && !window.controller().busy(); }, kResponsivenessWaitMs));
    SpeculativeLab& speculative = window.speculative_lab();
    window.show_tab(&speculative);
    speculative.prompt_edit().setText(QStringLiteral("Once upon a time"));
    speculative.tokens_box().setValue(200);
    speculative.repeats_box().setValue(1);
    QTest::qWait(200);
    GapMeter meter(window.controller());
    speculative.measure_button().click();
    ASSERT_TRUE(wait_until([&] { return speculative.result().has_value(); }, kResponsivenessWaitMs));
    BatchingLab& batching = window.batching_lab();
    window.show_tab(&batching);
    batching.set_trace(24, 12, 48, 8);
    batching.real_replay_button().click();
    ASSERT_TRUE(
        wait_until([&] { return !window.controller().lab_job_running(BatchingLab::kRealReplayJob); }, kResponsivenessWaitMs));
    EXPECT_FALSE(batching.replay_panel().plot_data().series[2].points.isEmpty());
    std::printf("[ measured ] speculative measurement and real replay: largest event-loop gap %lld ms\n",
                static_cast<long long>(meter.max_gap_ms()));
    meter.expect_work_off_the_ui_thread();
}

// Typing runs the soft labels' forward pass on the worker; dragging the temperature slider
// recomputes the distribution from the cached logits on the UI thread.
TEST(Responsiveness, EventLoopStaysLiveWhileSoftLabelsFollowThePromptAndTemperature) {
    MainWindow window;
    show_with_builtin_model(window);
    if (::testing::Test::HasFatalFailure()) return;
    SoftLabelsLab& lab = window.soft_labels_lab();
    window.show_tab(&lab);
    QTest::qWait(200);
    GapMeter meter(window.controller());
    const QString prompt = QStringLiteral("Soft labels follow the prompt");
    window.generation_panel().prompt_edit()->clear();
    QTest::keyClicks(window.generation_panel().prompt_edit(), prompt, Qt::NoModifier, 20);
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == prompt && lab.labels().has_value(); }, kResponsivenessWaitMs));
    for (int step = SoftLabelsLab::kMinTemperatureStep; step <= SoftLabelsLab::kMaxTemperatureStep; step += 25) {
        lab.temperature_slider().setValue(step);
        QTest::qWait(10);
    }
    EXPECT_EQ(lab.labels()->temperature, SoftLabelsLab::kMaxTemperatureStep / static_cast<double>(SoftLabelsLab::kTemperatureSteps));
    std::printf("[ measured ] soft labels typing and temperature drag: largest event-loop gap %lld ms\n",
                static_cast<long long>(meter.max_gap_ms()));
    meter.expect_work_off_the_ui_thread();
}

// Dragging the bit-width slider re-quantizes on the worker (debounced, stale runs cancelled);
// the UI thread only redraws the bars.
TEST(Responsiveness, EventLoopStaysLiveWhileTheBitWidthSliderMoves) {
    MainWindow window;
    show_with_builtin_model(window);
    if (::testing::Test::HasFatalFailure()) return;
    QuantizationLab& lab = window.quantization_lab();
    window.show_tab(&lab);
    ASSERT_TRUE(wait_until([&] { return lab.report().has_value(); }, kResponsivenessWaitMs));
    QTest::qWait(200);
    GapMeter meter(window.controller());
    for (int bits = 2; bits <= 8; ++bits) {
        lab.bits_slider().setValue(bits);
        QTest::qWait(100);
    }
    ASSERT_TRUE(wait_until([&] { return lab.report() && lab.report()->schemes.front().scheme.name() == "int8:row"; },
                           kResponsivenessWaitMs));
    std::printf("[ measured ] bit-width slider drag: largest event-loop gap %lld ms\n",
                static_cast<long long>(meter.max_gap_ms()));
    meter.expect_work_off_the_ui_thread();
}

}  // namespace
}  // namespace inferscope::ui
