#include "ui/labs/soft_labels_lab.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>
#include <algorithm>

#include "engine/model/model.h"
#include "ui/engine_controller.h"
#include "ui/panels/soft_labels_panel.h"

namespace inferscope::ui {

SoftLabelsLab::SoftLabelsLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      temperature_slider_(new QSlider(Qt::Horizontal)),
      temperature_label_(new QLabel()),
      top_k_box_(new QSpinBox()),
      status_(new QLabel(tr("Type a prompt in the generation panel: the model's next-token distribution follows it."))),
      ratio_line_(new QLabel()),
      panel_(new SoftLabelsPanel()) {
    setObjectName(QStringLiteral("soft-labels"));
    temperature_slider_->setRange(kMinTemperatureStep, kMaxTemperatureStep);
    temperature_slider_->setValue(kTemperatureSteps);
    temperature_label_->setText(QStringLiteral("T = %1").arg(temperature(), 0, 'f', 2));
    top_k_box_->setRange(1, 50);
    top_k_box_->setValue(kDefaultTopK);
    status_->setWordWrap(true);
    ratio_line_->setWordWrap(true);
    auto* row = new QHBoxLayout();
    auto* slider_label = new QLabel(tr("&Temperature:"));
    slider_label->setBuddy(temperature_slider_);
    auto* k_label = new QLabel(tr("Top &k:"));
    k_label->setBuddy(top_k_box_);
    row->addWidget(slider_label);
    row->addWidget(temperature_slider_, 1);
    row->addWidget(temperature_label_);
    row->addWidget(k_label);
    row->addWidget(top_k_box_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(status_);
    layout->addWidget(panel_, 1);
    layout->addWidget(ratio_line_);
    debounce_.setSingleShot(true);
    debounce_.setInterval(kDebounceMs);
    connect(&debounce_, &QTimer::timeout, this, [this] {
        if (isVisible() && !logits_are_current()) run_now();
    });
    connect(temperature_slider_, &QSlider::valueChanged, this, [this] {
        temperature_label_->setText(QStringLiteral("T = %1").arg(temperature(), 0, 'f', 2));
        show_distribution();
    });
    connect(top_k_box_, &QSpinBox::valueChanged, this, &SoftLabelsLab::show_distribution);
    connect_controller();
    if (controller_.has_model()) set_model(controller_.model());
}

double SoftLabelsLab::temperature() const { return temperature_slider_->value() / static_cast<double>(kTemperatureSteps); }

void SoftLabelsLab::set_model(const ModelSummary&) {
    logits_.reset();
    analysed_prompt_.clear();
    debounce_.start();
}

void SoftLabelsLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, &SoftLabelsLab::set_model);
    connect(&controller_, &EngineController::lab_job_finished, this, [this](const QString& kind, quint64, const std::any& result) {
        if (kind != kJob) return;
        logits_ = std::any_cast<const NextTokenLogits&>(result);
        analysed_prompt_ = running_prompt_;
        top_k_box_->setMaximum(static_cast<int>(std::min<size_t>(50, logits_->logits.size())));
        status_->setText(tr("The distribution after the prompt's %1 tokens (one forward pass; the slider reuses its logits).")
                             .arg(logits_->prompt_ids.size()));
        show_distribution();
    });
    connect(&controller_, &EngineController::lab_job_failed, this, [this](const QString& kind, quint64, const QString& message) {
        if (kind == kJob) status_->setText(tr("The forward pass failed: %1").arg(message));
    });
}

void SoftLabelsLab::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!logits_are_current()) debounce_.start();
}

void SoftLabelsLab::set_prompt(const QString& prompt) {
    prompt_ = prompt;
    debounce_.start();
}

void SoftLabelsLab::run_now() {
    debounce_.stop();
    if (!controller_.has_model() || prompt_.trimmed().isEmpty()) return;
    running_prompt_ = prompt_;
    const std::string prompt = prompt_.toStdString();
    controller_.run_lab_job({kJob, [prompt](const LabContext& context) -> std::any {
                                 return measure_next_token_logits(context, prompt);
                             }});
}

void SoftLabelsLab::show_distribution() {
    if (!logits_) return;
    const Tokenizer& tokenizer = logits_->model->tokenizer();
    const int k = top_k_box_->value();
    labels_ = soft_labels(tokenizer, logits_->logits, temperature(), k);
    panel_->set_labels(*labels_);
    // At T = 1 for comparison: every probability ratio at T is the T = 1 ratio to the power 1/T.
    const SoftLabels at_one = soft_labels(tokenizer, logits_->logits, 1.0, k);
    ratio_line_->setText(tr("At T = %1: top/%2-th ratio %3, mass beyond the argmax %4 (at T = 1: ratio %5, mass %6; "
                            "the ratio at T is the T = 1 ratio to the power 1/T).")
                             .arg(labels_->temperature, 0, 'f', 2)
                             .arg(k)
                             .arg(labels_->top_to_kth_ratio, 0, 'g', 4)
                             .arg(labels_->mass_beyond_argmax, 0, 'f', 4)
                             .arg(at_one.top_to_kth_ratio, 0, 'g', 4)
                             .arg(at_one.mass_beyond_argmax, 0, 'f', 4));
    emit labels_changed();
}

QList<ChartPanel*> SoftLabelsLab::panels() const { return {panel_}; }

}  // namespace inferscope::ui
