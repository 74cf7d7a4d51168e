// The speculative tab's measured half, driven through its controls on stories260K: Measure
// runs the loaded model against the draft as a lab job whose numbers equal the engine's
// measure_speculative run directly with the same parameters, whose output is plain greedy
// decoding's, and whose measured point and alpha/c reach the analytic chart; Cancel ends a
// running measurement with no result; a second file serves as the draft; errors name the
// problem; the chart exports the measured point.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <cmath>

#include "engine/model/model.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"
#include "engine/speculative/spec_measure.h"
#include "engine/speculative/spec_table.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/lab_job_recorder.h"
#include "ui/labs/repeats.h"
#include "ui/labs/speculative_lab.h"
#include "ui/panels/speculative_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::shared_model_path;
using inferscope::testing::wait_until;

using inferscope::testing::kLabWaitMs;
const QString kSpeculativePrompt = QStringLiteral("Once upon a time");

class SpeculativeLabTest : public inferscope::testing::SharedStoriesSuite {
protected:

    // Clicks Measure and waits for the job to end; returns whether a result arrived.
    static bool measure_and_wait(SpeculativeLab& lab, const LabRecorder& rec) {
        lab.measure_button().click();
        return wait_until([&] { return lab.result().has_value() || !rec.failures.isEmpty(); }, kLabWaitMs) &&
               lab.result().has_value();
    }
};

// The engine run directly: the target under int4:row as the draft, greedy, on sessions
// sized as the lab sizes them.
SpeculativeMeasurement direct_measurement(const std::shared_ptr<const Model>& target, int n_predict, int gamma) {
    const auto draft = quantize_model(target, parse_quant_scheme("int4:row"), QuantRunOptions{}).model;
    const std::vector<TokenId> prompt = target->tokenizer().encode(kSpeculativePrompt.toStdString(), true, true);
    SessionOptions so;
    so.n_ctx = static_cast<int>(prompt.size()) + n_predict + gamma + 1;
    InferenceSession target_session(target, so), draft_session(draft, so);
    SpeculativeOptions o;
    o.n_predict = n_predict;
    o.gamma = gamma;
    return measure_speculative(target_session, draft_session, prompt, o);
}

TEST_F(SpeculativeLabTest, MeasureEqualsTheEngineAndMovesTheCurvesToTheMeasuredAlphaAndC) {
    SpeculativeLab lab(controller());
    LabRecorder rec(controller());
    EXPECT_EQ(lab.draft_box().currentText(), SpeculativeLab::kDefaultScheme);
    lab.prompt_edit().setText(kSpeculativePrompt);
    lab.gamma_box().setValue(3);
    lab.tokens_box().setValue(40);
    ASSERT_TRUE(measure_and_wait(lab, rec)) << rec.failures.join(QLatin1Char('\n')).toStdString();
    EXPECT_TRUE(rec.progress_stages.contains(QStringLiteral("plain decoding")));
    EXPECT_TRUE(rec.progress_stages.contains(QStringLiteral("speculative decoding")));
    EXPECT_FALSE(lab.cancel_button().isEnabled());

    const SpeculativeRunResult& shown = *lab.result();
    const SpeculativeMeasurement direct = direct_measurement(direct_model(), 40, 3);
    const SpeculativeStats& a = shown.measured.speculative.stats;
    const SpeculativeStats& b = direct.speculative.stats;
    EXPECT_EQ(shown.measured.speculative.generated, direct.speculative.generated);
    EXPECT_EQ(shown.measured.plain.generated, direct.plain.generated);
    EXPECT_EQ(a.accepted, b.accepted);
    EXPECT_EQ(a.proposed, b.proposed);
    EXPECT_EQ(a.verify_passes, b.verify_passes);
    EXPECT_EQ(a.draft_steps, b.draft_steps);
    EXPECT_EQ(a.emitted, b.emitted);
    EXPECT_EQ(a.acceptance(), b.acceptance());
    EXPECT_EQ(a.tokens_per_verify(), b.tokens_per_verify());
    EXPECT_EQ(shown.measured.speculative.stop_reason, direct.speculative.stop_reason);
    ASSERT_TRUE(shown.measured.identical_to_plain.has_value());
    EXPECT_TRUE(*shown.measured.identical_to_plain);

    // The output is plain greedy decoding's (generate() on the target alone).
    SessionOptions so;
    so.n_ctx = 128;
    InferenceSession plain_session(direct_model(), so);
    GenerationOptions g;
    g.n_predict = 40;
    g.sampling.temperature = 0.0f;
    const GenerationResult plain =
        generate(plain_session, direct_model()->tokenizer().encode(kSpeculativePrompt.toStdString(), true, true), g);
    EXPECT_EQ(shown.text, direct_model()->tokenizer().decode(plain.generated));
    EXPECT_TRUE(lab.results().text().endsWith(QString::fromStdString(shown.text)));

    // The chart: the measured point, and the curves at the measured alpha and c.
    SpeculativePanel& panel = lab.panel();
    EXPECT_EQ(panel.alpha(), a.acceptance());
    EXPECT_EQ(panel.cost_ratio(), shown.measured.cost_ratio);
    EXPECT_EQ(panel.gamma(), 3);
    EXPECT_EQ(panel.alpha_slider()->value(), static_cast<int>(std::lround(a.acceptance() * SpeculativePanel::kSliderSteps)));
    const PlotData data = panel.plot_data();
    ASSERT_EQ(data.series.size(), 4);
    // The measured point is the mean of the repeats (the box's default 3), each run's tokens the same.
    EXPECT_EQ(lab.repeats_box().value(), 3);
    EXPECT_EQ(shown.speedup.count, 3);
    EXPECT_GT(shown.speedup.mean, 0);
    EXPECT_EQ(data.series[3].points, QVector<QPointF>{QPointF(3, shown.speedup.mean)});
    EXPECT_TRUE(lab.results().text().contains(format_mean_spread(shown.speedup, 2))) << lab.results().text().toStdString();
    for (int gamma = 1; gamma <= SpeculativePanel::kMaxGamma; ++gamma) {
        EXPECT_EQ(data.series[0].points[gamma - 1],
                  QPointF(gamma, speculative_speedup(a.acceptance(), gamma, shown.measured.cost_ratio)));
    }
    EXPECT_TRUE(lab.results().text().contains(QStringLiteral("\u03b1 = %1").arg(a.acceptance(), 0, 'f', 3)))
        << lab.results().text().toStdString();

    // Moving the alpha slider afterwards hands alpha back to the slider; c stays measured.
    panel.alpha_slider()->setValue(50);
    EXPECT_EQ(panel.alpha(), 0.5);
    EXPECT_EQ(panel.cost_ratio(), shown.measured.cost_ratio);

    // The export carries the measured point.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("speculative.json"));
    ASSERT_TRUE(export_chart(panel, path, ExportFormat::Json).isEmpty());
    QFile json(path);
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    EXPECT_TRUE(json.readAll().contains("measured: "));
}

TEST(SpeculativeLabWarning, FlagsASpeedUpAboveTheTokensPerVerifyAndANoisyOne) {
    SpeculativeRunResult result;
    SpeculativeStats& stats = result.measured.speculative.stats;
    stats.emitted = 30;
    stats.verify_passes = 10;  // 3 tokens per verify pass: the speed-up cannot pass 3x
    const std::vector<double> steady = {1.9, 2.0, 2.1}, impossible = {6.8, 6.9, 7.0}, noisy = {0.5, 1.5, 2.5};
    result.speedup = sample_stats(steady);
    EXPECT_TRUE(SpeculativeLab::speedup_warning(result).isEmpty());
    result.speedup = sample_stats(impossible);
    EXPECT_TRUE(SpeculativeLab::speedup_warning(result).contains(QLatin1String("Impossible result: a speed-up of 6.90")))
        << SpeculativeLab::speedup_warning(result).toStdString();
    EXPECT_TRUE(SpeculativeLab::speedup_warning(result).contains(QLatin1String("3.00 tokens per verify")));
    result.speedup = sample_stats(noisy);
    EXPECT_TRUE(SpeculativeLab::speedup_warning(result).contains(QLatin1String("Noisy result")));
}

TEST_F(SpeculativeLabTest, CancelEndsARunningMeasurementWithNoResult) {
    SpeculativeLab lab(controller());
    LabRecorder rec(controller());
    lab.prompt_edit().setText(kSpeculativePrompt);
    lab.tokens_box().setValue(400);
    lab.measure_button().click();
    EXPECT_TRUE(lab.cancel_button().isEnabled());
    EXPECT_FALSE(lab.measure_button().isEnabled());
    ASSERT_TRUE(wait_until([&] { return rec.progress_stages.contains(QStringLiteral("plain decoding")); }, kLabWaitMs));
    lab.cancel_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.cancelled.isEmpty(); }, kLabWaitMs));
    EXPECT_EQ(rec.cancelled_kinds, QStringList{SpeculativeLab::kJob});
    EXPECT_EQ(rec.result_of(SpeculativeLab::kJob), nullptr);
    EXPECT_FALSE(lab.result().has_value());
    EXPECT_TRUE(lab.status().text().contains(QLatin1String("cancelled"))) << lab.status().text().toStdString();
    EXPECT_TRUE(lab.panel().plot_data().series[3].points.isEmpty());
    // The tab stays usable: the next measurement delivers.
    EXPECT_TRUE(lab.measure_button().isEnabled());
    EXPECT_FALSE(lab.cancel_button().isEnabled());
    lab.tokens_box().setValue(8);
    ASSERT_TRUE(measure_and_wait(lab, rec)) << rec.failures.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(lab.result()->measured.speculative.generated.size(), 8u);
}

TEST_F(SpeculativeLabTest, ASecondFileIsADraftAndBadDraftsAreNamedErrors) {
    SpeculativeLab lab(controller());
    LabRecorder rec(controller());
    lab.prompt_edit().setText(kSpeculativePrompt);
    lab.tokens_box().setValue(16);
    // The target as its own draft: every proposal accepted, gamma + 1 tokens per verify.
    lab.set_draft_file(shared_model_path("stories260K.gguf"));
    EXPECT_EQ(lab.settings().draft_path, inferscope::testing::shared_model("stories260K.gguf").string());
    EXPECT_TRUE(lab.settings().draft_scheme.empty());
    ASSERT_TRUE(measure_and_wait(lab, rec)) << rec.failures.join(QLatin1Char('\n')).toStdString();
    EXPECT_EQ(lab.result()->measured.speculative.stats.acceptance(), 1.0);
    EXPECT_EQ(lab.panel().alpha(), 1.0);

    // Another vocabulary (qwen2-tiny: byte-level BPE) is refused with the reason.
    if (std::filesystem::exists(inferscope::testing::shared_model("qwen2-tiny.gguf"))) {
        lab.set_draft_file(shared_model_path("qwen2-tiny.gguf"));
        lab.measure_button().click();
        ASSERT_TRUE(wait_until([&] { return !rec.failures.isEmpty(); }, kLabWaitMs));
        EXPECT_TRUE(rec.failures.back().contains(QLatin1String("vocabular"))) << rec.failures.back().toStdString();
        EXPECT_TRUE(lab.status().text().contains(QLatin1String("failed")));
    } else {
        std::printf("[   INFO   ] qwen2-tiny.gguf absent: the different-vocabulary draft is not checked\n");
    }
    // A scheme typed into the box that does not exist.
    rec.failures.clear();
    lab.draft_box().setEditText(QStringLiteral("int9:row"));
    EXPECT_EQ(lab.settings().draft_scheme, "int9:row");
    lab.measure_button().click();
    ASSERT_TRUE(wait_until([&] { return !rec.failures.isEmpty(); }, kLabWaitMs));
    EXPECT_TRUE(rec.failures.back().contains(QLatin1String("int9"))) << rec.failures.back().toStdString();
    EXPECT_TRUE(lab.measure_button().isEnabled());
}

}  // namespace
}  // namespace inferscope::ui
