// The soft-labels tab's student: choosing a quantization scheme runs the prompt through the
// loaded model quantized under it, the student's top-k bars and KL(teacher || student) are
// the engine's soft_labels for the same prompt, scheme and temperature, the slider
// recomputes the KL without a pass, the student is quantized once per scheme, and its chart
// exports.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QSlider>
#include <QTemporaryDir>

#include "engine/eval/soft_labels.h"
#include "engine/model/model.h"
#include "engine/quant/model_quantizer.h"
#include "engine/quant/scheme.h"
#include "engine/runtime/session.h"
#include "engine/synth/synthetic_model.h"
#include "support/test_paths.h"
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
const QString kStudentPrompt = QStringLiteral("Once upon a time there was a");
const QString kScheme = QStringLiteral("int4:row");

std::vector<float> logits_after(const std::shared_ptr<const Model>& model, const QString& prompt) {
    const std::vector<TokenId> tokens = model->tokenizer().encode(prompt.toStdString(), true, true);
    SessionOptions so;
    so.n_ctx = static_cast<int>(tokens.size());
    InferenceSession session(model, so);
    return next_token_logits(session, tokens);
}

// One controller with the built-in model loaded; the teacher and its int4:row student built
// here without the UI.
class SoftLabelsStudentTest : public inferscope::testing::SharedModelSuite {
protected:
    static void SetUpTestSuite() {
        load_model(QString(), kEngineWaitMs);
        student_ = quantize_model(direct_model(), parse_quant_scheme(kScheme.toStdString()), {}).model;
    }
    static void TearDownTestSuite() {
        student_.reset();
        SharedModelSuite::TearDownTestSuite();
    }
    void SetUp() override { ASSERT_TRUE(model_loaded()) << "the built-in model did not load in the controller"; }

    // The teacher's labels with the KL to the student, and the student's own labels.
    static std::pair<SoftLabels, SoftLabels> expected(const QString& prompt, double temperature, int top_k) {
        const std::vector<float> teacher = logits_after(direct_model(), prompt), student = logits_after(student_, prompt);
        return {soft_labels(direct_model()->tokenizer(), teacher, temperature, top_k, student),
                soft_labels(direct_model()->tokenizer(), student, temperature, top_k)};
    }
    // The lab shown with the student chosen, `prompt` analysed with it.
    static void analyse_with_student(SoftLabelsLab& lab, const QString& prompt) {
        lab.student_box().setCurrentIndex(lab.student_box().findData(kScheme));
        ASSERT_EQ(lab.student_scheme(), kScheme);
        lab.show();
        lab.set_prompt(prompt);
        ASSERT_TRUE(wait_until(
            [&] {
                return lab.analysed_prompt() == prompt && lab.logits() && lab.logits()->student_scheme == kScheme.toStdString() &&
                       lab.student_labels().has_value();
            },
            kEngineWaitMs));
    }

private:
    static inline std::shared_ptr<const Model> student_;
};

// The soft-label jobs' progress stages while it lives.
struct StageRecorder {
    explicit StageRecorder(EngineController& c) : recorder(c) {}
    QStringList stages() const { return recorder.stages_of(SoftLabelsLab::kJob); }
    bool quantized() const { return !stages().filter(QStringLiteral("quantizing the student")).isEmpty(); }
    int finished() const { return recorder.finished_count(SoftLabelsLab::kJob); }
    LabRecorder recorder;
};

void expect_student_shown(const SoftLabelsLab& lab, const std::pair<SoftLabels, SoftLabels>& want) {
    const auto& [teacher, student] = want;
    ASSERT_TRUE(teacher.kl_teacher_student.has_value());
    ASSERT_TRUE(lab.labels().has_value() && lab.labels()->kl_teacher_student.has_value());
    EXPECT_EQ(*lab.labels()->kl_teacher_student, *teacher.kl_teacher_student);
    EXPECT_GT(*teacher.kl_teacher_student, 0.0);  // int4 changes the distribution
    EXPECT_TRUE(lab.kl_line().text().contains(format_number(*teacher.kl_teacher_student, 6)))
        << lab.kl_line().text().toStdString();
    const PlotData data = lab.student_panel().plot_data();
    ASSERT_EQ(data.series.size(), 1);
    ASSERT_EQ(data.series[0].points.size(), static_cast<qsizetype>(student.top.size()));
    const QStringList categories = lab.student_panel().categories();
    for (size_t i = 0; i < student.top.size(); ++i) {
        EXPECT_EQ(data.series[0].points[static_cast<qsizetype>(i)].y(), student.top[i].probability) << "rank " << i + 1;
        EXPECT_TRUE(categories[static_cast<qsizetype>(i)].contains(QString::fromStdString(student.top[i].text)));
    }
    // The teacher's bars stay the teacher's, each beside the student's probability of the same token.
    const PlotData teacher_data = lab.panel().plot_data();
    ASSERT_EQ(teacher_data.series.size(), 2);
    EXPECT_EQ(teacher_data.series[0].name, QStringLiteral("teacher"));
    EXPECT_TRUE(teacher_data.series[1].name.startsWith(QStringLiteral("student (%1)").arg(kScheme)))
        << teacher_data.series[1].name.toStdString();
    ASSERT_EQ(teacher_data.series[0].points.size(), static_cast<qsizetype>(teacher.top.size()));
    ASSERT_EQ(teacher_data.series[1].points.size(), static_cast<qsizetype>(teacher.top.size()));
    ASSERT_EQ(teacher.student_on_top.size(), teacher.top.size());
    for (size_t i = 0; i < teacher.top.size(); ++i) {
        EXPECT_EQ(teacher_data.series[0].points[static_cast<qsizetype>(i)].y(), teacher.top[i].probability);
        EXPECT_EQ(teacher_data.series[1].points[static_cast<qsizetype>(i)].y(), teacher.student_on_top[i]);
    }
}

TEST_F(SoftLabelsStudentTest, TheStudentsKlIsTheEnginesAtTheSlidersTemperature) {
    SoftLabelsLab lab(controller());
    analyse_with_student(lab, kStudentPrompt);
    expect_student_shown(lab, expected(kStudentPrompt, 1.0, SoftLabelsLab::kDefaultTopK));
    const double kl_at_one = *lab.labels()->kl_teacher_student;

    StageRecorder jobs(controller());
    lab.temperature_slider().setValue(2 * SoftLabelsLab::kTemperatureSteps);
    EXPECT_FALSE(controller().lab_job_running(SoftLabelsLab::kJob));
    expect_student_shown(lab, expected(kStudentPrompt, 2.0, SoftLabelsLab::kDefaultTopK));
    EXPECT_NE(*lab.labels()->kl_teacher_student, kl_at_one);
    EXPECT_TRUE(lab.kl_line().text().contains(QStringLiteral("T = 2.00")));
    wait_until([] { return false; }, 2 * SoftLabelsLab::kDebounceMs);
    EXPECT_EQ(jobs.finished(), 0);
}

TEST_F(SoftLabelsStudentTest, TheStudentIsQuantizedOncePerScheme) {
    SoftLabelsLab lab(controller());
    {
        StageRecorder first(controller());
        analyse_with_student(lab, kStudentPrompt);
        EXPECT_TRUE(first.quantized()) << first.stages().join(QLatin1Char('\n')).toStdString();
    }
    StageRecorder later(controller());
    const QString newer = QStringLiteral("The little dog ran");
    lab.set_prompt(newer);
    ASSERT_TRUE(wait_until([&] { return lab.analysed_prompt() == newer; }, kEngineWaitMs));
    expect_student_shown(lab, expected(newer, 1.0, SoftLabelsLab::kDefaultTopK));
    // No student: the teacher alone, no KL.
    lab.student_box().setCurrentIndex(0);
    ASSERT_TRUE(wait_until([&] { return lab.logits() && lab.logits()->student_scheme.empty(); }, kEngineWaitMs));
    EXPECT_FALSE(lab.labels()->kl_teacher_student.has_value());
    EXPECT_FALSE(lab.student_labels().has_value());
    EXPECT_TRUE(lab.student_panel().plot_data().series[0].points.isEmpty());
    EXPECT_EQ(lab.panel().plot_data().series.size(), 1);  // the teacher's bars alone
    // Back to the same scheme: still built.
    lab.student_box().setCurrentIndex(lab.student_box().findData(kScheme));
    ASSERT_TRUE(wait_until([&] { return lab.logits() && lab.logits()->student_scheme == kScheme.toStdString(); }, kEngineWaitMs));
    expect_student_shown(lab, expected(newer, 1.0, SoftLabelsLab::kDefaultTopK));
    EXPECT_EQ(later.finished(), 3);
    EXPECT_FALSE(later.quantized()) << later.stages().join(QLatin1Char('\n')).toStdString();
}

TEST_F(SoftLabelsStudentTest, TheStudentsChartExports) {
    SoftLabelsLab lab(controller());
    analyse_with_student(lab, kStudentPrompt);
    QTemporaryDir dir;
    const QString csv_path = dir.filePath(QStringLiteral("student.csv"));
    ASSERT_TRUE(export_chart(lab.student_panel(), csv_path, ExportFormat::Csv).isEmpty());
    QFile csv(csv_path);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    const QByteArray csv_text = csv.readAll();
    EXPECT_EQ(csv_text, plot_data_to_csv(lab.student_panel().plot_data()));
    EXPECT_EQ(csv_text.count('\n'), 1 + SoftLabelsLab::kDefaultTopK);
    EXPECT_EQ(lab.student_panel().export_name(), QStringLiteral("soft-labels-student"));
    EXPECT_TRUE(lab.student_panel().plot_data().title.contains(kScheme));
}

// stories260K's rows are 64 weights wide: Q4_K's 256-weight blocks do not fit, and the lab
// says so instead of showing a student.
TEST(SoftLabelsStudent, ASchemeTheShapesRuleOutNamesTheProblem) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    EngineController c;
    bool loaded = false;
    QString failure;
    QObject::connect(&c, &EngineController::model_loaded, [&] { loaded = true; });
    QObject scope;
    QObject::connect(&c, &EngineController::lab_job_started, &scope, [&](LabJobWatcher* job) {
        if (job->kind() == SoftLabelsLab::kJob)
            QObject::connect(job, &LabJobWatcher::failed, &scope, [&](const QString& message) { failure = message; });
    });
    c.load_model(inferscope::testing::shared_model_path("stories260K.gguf"));
    ASSERT_TRUE(wait_until([&] { return loaded && !c.busy(); }, kEngineWaitMs));
    SoftLabelsLab lab(c);
    lab.student_box().setCurrentIndex(lab.student_box().findData(QStringLiteral("q4_k")));
    ASSERT_EQ(lab.student_scheme(), QStringLiteral("q4_k"));
    lab.show();
    lab.set_prompt(kStudentPrompt);
    ASSERT_TRUE(wait_until([&] { return !failure.isEmpty(); }, kEngineWaitMs));
    EXPECT_TRUE(failure.contains(QStringLiteral("multiple of 256"))) << failure.toStdString();
    EXPECT_FALSE(lab.logits().has_value());
    EXPECT_FALSE(lab.student_labels().has_value());
    // Another student works on the same model.
    lab.student_box().setCurrentIndex(lab.student_box().findData(kScheme));
    ASSERT_TRUE(wait_until([&] { return lab.logits() && lab.logits()->student_scheme == kScheme.toStdString(); }, kEngineWaitMs));
    EXPECT_TRUE(lab.labels()->kl_teacher_student.has_value());
}

}  // namespace
}  // namespace inferscope::ui
