#include "ui/labs/soft_labels_lab.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/model/model.h"
#include "ui/engine_controller.h"
#include "ui/labs/scheme_fit.h"
#include "ui/flow_layout.h"
#include "ui/labs/prompt_follower.h"
#include "ui/panels/soft_labels_panel.h"
#include "ui/wrapping_label.h"
#include "ui/number_format.h"

namespace inferscope::ui {
namespace {

// Students offered; those a model's row lengths rule out are disabled on loading it.
const QStringList kStudentSchemes{QStringLiteral("int8:row"), QStringLiteral("int4:row"), QStringLiteral("int4:g32"),
                                  QStringLiteral("int2:row"), QStringLiteral("nf4"),      QStringLiteral("q8_0"),
                                  QStringLiteral("q4_0"),     QStringLiteral("q4_k")};

}  // namespace

SoftLabelsLab::SoftLabelsLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      temperature_slider_(new QSlider(Qt::Horizontal)),
      temperature_label_(new QLabel()),
      top_k_box_(new QSpinBox()),
      status_(new QLabel(tr("Type a prompt in the generation panel: the model's next-token distribution follows it."))),
      ratio_line_(new QLabel()),
      student_box_(new QComboBox()),
      kl_line_(new QLabel()),
      panel_(new SoftLabelsPanel()),
      student_panel_(new SoftLabelsPanel(QStringLiteral("soft-labels-student"), tr("Student's next-token distribution"))),
      follower_(new PromptFollower(*this, controller, kJob, kDebounceMs,
                                   {[this] { return logits_are_current(); },
                                    [this](const std::string& prompt) { start_job(prompt); }})),
      students_(std::make_shared<StudentModels>()) {
    setObjectName(QStringLiteral("soft-labels"));
    temperature_slider_->setRange(kMinTemperatureStep, kMaxTemperatureStep);
    temperature_slider_->setValue(kTemperatureSteps);
    temperature_label_->setText(QStringLiteral("T = %1").arg(temperature(), 0, 'f', 2));
    top_k_box_->setRange(1, 50);
    top_k_box_->setValue(kDefaultTopK);
    wrap_within_column(status_);
    wrap_within_column(ratio_line_);
    wrap_within_column(kl_line_);
    student_box_->addItem(tr("none"), QString());
    for (const QString& scheme : kStudentSchemes) student_box_->addItem(scheme, scheme);
    build_layout();
    connect(temperature_slider_, &QSlider::valueChanged, this, [this] {
        temperature_label_->setText(QStringLiteral("T = %1").arg(temperature(), 0, 'f', 2));
        show_distribution();
    });
    connect(top_k_box_, &QSpinBox::valueChanged, this, &SoftLabelsLab::show_distribution);
    // A new student needs its own pass (and, the first time, its quantization).
    connect(student_box_, &QComboBox::currentIndexChanged, follower_, &PromptFollower::schedule);
    show_student();
    connect_controller();
    if (controller_.has_model()) set_model(controller_.model());
}

void SoftLabelsLab::build_layout() {
    auto* row = new FlowLayout();
    temperature_slider_->setMinimumWidth(160);
    row->addWidget(labelled_field(tr("&Temperature:"), temperature_slider_, temperature_label_));
    row->addWidget(labelled_field(tr("Top &k:"), top_k_box_));
    row->addWidget(labelled_field(tr("&Student (this model quantized):"), student_box_));
    auto* charts = new QHBoxLayout();
    charts->addWidget(panel_);
    charts->addWidget(student_panel_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(status_);
    layout->addLayout(charts, 1);
    layout->addWidget(ratio_line_);
    layout->addWidget(kl_line_);
}

void SoftLabelsLab::start_job(const std::string& prompt) {
    auto* job = controller_.run_lab_job(
        kJob, [prompt, scheme = student_scheme().toStdString(), students = students_](const LabContext& context) {
            if (scheme.empty()) return measure_next_token_logits(context, prompt);
            return measure_teacher_and_student_logits(context, prompt, scheme, *students);
        });
    follower_->track(*job);
    job->on_finished(this, [this](const NextTokenLogits& logits) { show_logits(logits); });
    // Quantizing a student takes seconds on a real model: say which matrix it is at.
    connect(job, &LabJobWatcher::progress, this, [this](double fraction, const QString& stage) {
        status_->setText(tr("%1 (%2 %)").arg(stage).arg(100.0 * fraction, 0, 'f', 0));
    });
}

double SoftLabelsLab::temperature() const { return temperature_slider_->value() / static_cast<double>(kTemperatureSteps); }

QString SoftLabelsLab::student_scheme() const { return student_box_->currentData().toString(); }

const QString& SoftLabelsLab::analysed_prompt() const { return follower_->analysed_prompt(); }

bool SoftLabelsLab::logits_are_current() const {
    return logits_ && follower_->prompt_is_analysed() && QString::fromStdString(logits_->student_scheme) == student_scheme();
}

void SoftLabelsLab::set_model(const ModelSummary& model) {
    const QList<int> lengths = matrix_row_lengths(model);
    for (int i = 1; i < student_box_->count(); ++i) {  // item 0 is "none"
        set_item_enabled(*student_box_, i, scheme_misfit(student_box_->itemData(i).toString(), lengths));
    }
    if (!item_enabled(*student_box_, student_box_->currentIndex())) student_box_->setCurrentIndex(0);
    logits_.reset();
    labels_.reset();
    panel_->clear(tr("Analysing the prompt on the new model…"));
    ratio_line_->clear();
    show_student();  // with no logits: the student's empty state
    follower_->forget_result();
    // Students of the previous model are not reused; a running job keeps its own reference.
    students_ = std::make_shared<StudentModels>();
    follower_->schedule();
}

void SoftLabelsLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, &SoftLabelsLab::set_model);
    connect(follower_, &PromptFollower::failed, this,
            [this](const QString& message) { status_->setText(tr("The distribution could not be computed: %1").arg(message)); });
}

void SoftLabelsLab::show_logits(const NextTokenLogits& logits) {
    logits_ = logits;
    top_k_box_->setMaximum(static_cast<int>(std::min<size_t>(50, logits_->logits.size())));
    status_->setText(tr("The distribution after the prompt's %1 tokens (one forward pass; the slider reuses its logits).")
                         .arg(logits_->prompt_ids.size()));
    show_distribution();
}

void SoftLabelsLab::set_prompt(const QString& prompt) { follower_->set_prompt(prompt); }

void SoftLabelsLab::run_now() { follower_->run_now(); }

void SoftLabelsLab::show_distribution() {
    if (!logits_) return;
    const Tokenizer& tokenizer = logits_->model->tokenizer();
    const int k = top_k_box_->value();
    labels_ = soft_labels(tokenizer, logits_->logits, temperature(), k, logits_->student_logits);
    panel_->set_labels(*labels_, QString::fromStdString(logits_->student_scheme));
    show_student();
    // At T = 1 for comparison: every probability ratio at T is the T = 1 ratio to the power 1/T.
    const SoftLabels at_one = soft_labels(tokenizer, logits_->logits, 1.0, k);
    ratio_line_->setText(tr("At T = %1: top/%2-th ratio %3, mass beyond the argmax %4 (at T = 1: ratio %5, mass %6; "
                            "the ratio at T is the T = 1 ratio to the power 1/T).")
                             .arg(labels_->temperature, 0, 'f', 2)
                             .arg(k)
                             .arg(format_number(labels_->top_to_kth_ratio, 4))
                             .arg(labels_->mass_beyond_argmax, 0, 'f', 4)
                             .arg(format_number(at_one.top_to_kth_ratio, 4))
                             .arg(at_one.mass_beyond_argmax, 0, 'f', 4));
    Q_EMIT labels_changed();
}

void SoftLabelsLab::show_student() {
    if (!logits_ || logits_->student_logits.empty() || !labels_) {
        student_labels_.reset();
        student_panel_->clear(tr("Student: choose a quantization scheme above"));
        kl_line_->setText(tr("Choose a student (this model under a quantization scheme) to see its distribution and "
                             "KL(teacher \u2016 student) at the slider's temperature."));
        return;
    }
    const QString scheme = QString::fromStdString(logits_->student_scheme);
    student_labels_ = soft_labels(logits_->model->tokenizer(), logits_->student_logits, labels_->temperature,
                                  static_cast<int>(labels_->top.size()));
    student_panel_->set_distribution_name(tr("Student (%1) next-token distribution").arg(scheme));
    student_panel_->set_labels(*student_labels_);
    kl_line_->setText(tr("KL(teacher \u2016 student) at T = %1: %2 nats (student: this model under %3; both "
                         "distributions softened by the same T).")
                          .arg(labels_->temperature, 0, 'f', 2)
                          .arg(format_number(labels_->kl_teacher_student.value_or(0.0), 6))
                          .arg(scheme));
}

QList<ChartPanel*> SoftLabelsLab::panels() const { return {panel_, student_panel_}; }

}  // namespace inferscope::ui
