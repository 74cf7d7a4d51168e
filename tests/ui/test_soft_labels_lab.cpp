// The soft-labels tab: the prompt triggers one forward pass as a lab job, the bars are the
// engine's soft labels for that prompt at the slider's T and the box's k, the slider
// recomputes them from the cached logits without another job, a newer prompt cancels the
// older pass, and the chart exports.
#include <gtest/gtest.h>

#include <QBarCategoryAxis>
#include <QFile>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QTemporaryDir>
#include <cmath>

#include "engine/eval/soft_labels.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "engine/synth/synthetic_model.h"
#include "ui/chart_export.h"
#include "ui/engine_controller.h"
#include "ui/lab_job_recorder.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/number_format.h"
#include "ui/panels/soft_labels_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;
const QString kSoftLabelsPrompt = QStringLiteral("Once upon a time there was a");

// One controller with the built-in model loaded, and one copy of it for the engine run directly.
class SoftLabelsLabTest : public inferscope::testing::SharedModelSuite {
protected:
    static void SetUpTestSuite() { load_model(QString(), kEngineWaitMs); }
    void SetUp() override { ASSERT_TRUE(model_loaded()) << "the built-in model did not load in the controller"; }

    // The engine's soft labels for `prompt`, computed here without the UI.
    static SoftLabels expected_labels(const QString& prompt, double temperature, int top_k) {
        const std::vector<TokenId> tokens = direct_model()->tokenizer().encode(prompt.toStdString(), true, true);
        SessionOptions so;
        so.n_ctx = static_cast<int>(tokens.size());
        InferenceSession session(direct_model(), so);
        const std::vector<float> logits = next_token_logits(session, tokens);
        return soft_labels(direct_model()->tokenizer(), logits, temperature, top_k);
    }
    // The lab shown, its prompt analysed.
    static void analyse(SoftLabelsLab& lab, const QString& prompt) {
        lab.show();
        lab.set_prompt(prompt);
        ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == prompt && lab.labels().has_value(); }, kEngineWaitMs));
    }
};

// Counts the finished soft-label jobs while it lives.
struct JobCounter {
    explicit JobCounter(EngineController& c) : recorder(c) {}
    int finished() const { return recorder.finished_count(SoftLabelsLab::kJob); }
    LabRecorder recorder;
};

void expect_chart_shows(const SoftLabelsLab& lab, const SoftLabels& expected) {
    const PlotData data = lab.panel().plot_data();
    ASSERT_EQ(data.series.size(), 1);
    ASSERT_EQ(data.series[0].points.size(), static_cast<qsizetype>(expected.top.size()));
    const QStringList categories = lab.panel().categories();
    for (size_t i = 0; i < expected.top.size(); ++i) {
        EXPECT_EQ(data.series[0].points[static_cast<qsizetype>(i)].x(), static_cast<double>(i));
        EXPECT_EQ(data.series[0].points[static_cast<qsizetype>(i)].y(), expected.top[i].probability) << "rank " << i + 1;
        EXPECT_TRUE(categories[static_cast<qsizetype>(i)].contains(QString::fromStdString(expected.top[i].text)));
    }
    ASSERT_TRUE(lab.labels().has_value());
    EXPECT_EQ(lab.labels()->top_to_kth_ratio, expected.top_to_kth_ratio);
    EXPECT_EQ(lab.labels()->mass_beyond_argmax, expected.mass_beyond_argmax);
    EXPECT_TRUE(lab.ratio_line().text().contains(format_number(expected.top_to_kth_ratio, 4)))
        << lab.ratio_line().text().toStdString();
    EXPECT_TRUE(lab.ratio_line().text().contains(QString::number(expected.mass_beyond_argmax, 'f', 4)));
}

// Pieces that look like markup ("</s>", "<0x0A>") are shown escaped on the rich-text axis and
// kept as they are in the categories and the export.
TEST(SoftLabelsPanel, PiecesThatLookLikeTagsStayVisible) {
    SoftLabels labels;
    labels.top = {{2, "</s>", 0.6}, {13, "<0x0A>", 0.3}, {65, "a", 0.1}};
    SoftLabelsPanel panel;
    panel.set_labels(labels);
    EXPECT_EQ(panel.categories(), (QStringList{QStringLiteral("1 '</s>'"), QStringLiteral("2 '<0x0A>'"), QStringLiteral("3 'a'")}));
    EXPECT_EQ(panel.plot_data().categories, panel.categories());
    auto* axis = qobject_cast<QBarCategoryAxis*>(panel.chart()->axes(Qt::Horizontal).front());
    ASSERT_NE(axis, nullptr);
    EXPECT_EQ(axis->categories().front(), QStringLiteral("1 '&lt;/s&gt;'"));
}

TEST_F(SoftLabelsLabTest, ThePromptsDistributionIsTheEnginesSoftLabels) {
    SoftLabelsLab lab(controller());
    analyse(lab, kSoftLabelsPrompt);
    EXPECT_EQ(lab.temperature(), 1.0);
    EXPECT_EQ(lab.top_k_box().value(), SoftLabelsLab::kDefaultTopK);
    expect_chart_shows(lab, expected_labels(kSoftLabelsPrompt, 1.0, SoftLabelsLab::kDefaultTopK));
}

TEST_F(SoftLabelsLabTest, TheTemperatureSliderRecomputesWithoutANewPass) {
    SoftLabelsLab lab(controller());
    analyse(lab, kSoftLabelsPrompt);
    const double ratio_at_one = lab.labels()->top_to_kth_ratio;
    JobCounter jobs(controller());
    lab.temperature_slider().setValue(2 * SoftLabelsLab::kTemperatureSteps);
    EXPECT_EQ(lab.temperature(), 2.0);
    EXPECT_FALSE(controller().lab_job_running(SoftLabelsLab::kJob));
    expect_chart_shows(lab, expected_labels(kSoftLabelsPrompt, 2.0, SoftLabelsLab::kDefaultTopK));
    // p_i / p_j = exp((z_i - z_j) / T): at T = 2 the ratio is the square root of T = 1's.
    EXPECT_NEAR(lab.labels()->top_to_kth_ratio, std::sqrt(ratio_at_one), 1e-9 * ratio_at_one);
    EXPECT_GT(ratio_at_one, lab.labels()->top_to_kth_ratio);
    lab.temperature_slider().setValue(SoftLabelsLab::kMinTemperatureStep);
    lab.top_k_box().setValue(3);
    expect_chart_shows(lab, expected_labels(kSoftLabelsPrompt, 0.25, 3));
    // Let a debounced run (there must be none) have its chance.
    wait_until([] { return false; }, 2 * SoftLabelsLab::kDebounceMs);
    EXPECT_EQ(jobs.finished(), 0);
    EXPECT_FALSE(controller().lab_job_running(SoftLabelsLab::kJob));
}

TEST_F(SoftLabelsLabTest, ANewerPromptCancelsTheOlderPass) {
    EngineController& c = controller();
    SoftLabelsLab lab(c);
    lab.show();
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(SoftLabelsLab::kJob); }, kEngineWaitMs));
    JobCounter jobs(c);
    lab.set_prompt(QStringLiteral("an older prompt that the user kept typing after"));
    lab.run_now();
    const QString newer = QStringLiteral("a newer prompt");
    lab.set_prompt(newer);
    lab.run_now();
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == newer; }, kEngineWaitMs));
    ASSERT_TRUE(wait_until([&] { return !c.lab_job_running(SoftLabelsLab::kJob); }, kEngineWaitMs));
    EXPECT_EQ(jobs.finished(), 1);
    EXPECT_EQ(lab.logits()->prompt_ids, lab.logits()->model->tokenizer().encode(newer.toStdString(), true, true));
    expect_chart_shows(lab, expected_labels(newer, 1.0, SoftLabelsLab::kDefaultTopK));
}

TEST_F(SoftLabelsLabTest, TheChartExportsThePlottedData) {
    SoftLabelsLab lab(controller());
    analyse(lab, kSoftLabelsPrompt);
    QTemporaryDir dir;
    const QString json_path = dir.filePath(QStringLiteral("soft.json"));
    ASSERT_TRUE(export_chart(lab.panel(), json_path, ExportFormat::Json).isEmpty());
    QFile json(json_path);
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    const QByteArray written = json.readAll();
    EXPECT_EQ(written, plot_data_to_json(lab.panel().plot_data()));
    EXPECT_TRUE(written.contains("probability at T"));
    const QString csv_path = dir.filePath(QStringLiteral("soft.csv"));
    ASSERT_TRUE(export_chart(lab.panel(), csv_path, ExportFormat::Csv).isEmpty());
    QFile csv(csv_path);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QByteArray csv_text = csv.readAll();
    EXPECT_EQ(csv_text, plot_data_to_csv(lab.panel().plot_data()));
    EXPECT_EQ(csv_text.count('\n'), 1 + SoftLabelsLab::kDefaultTopK);  // the header, one row per bar
}

}  // namespace
}  // namespace inferscope::ui
