#pragma once
// The soft-labels tab: distillation's view of the loaded model as a teacher. Follows the
// generation prompt as the user types (debounced; a newer prompt cancels the running pass),
// runs one forward pass per prompt for the next-token logits, and shows the top-k
// probabilities at the temperature of a slider. Moving the slider or the k box recomputes
// the distribution from the cached logits on the UI thread: no new forward pass. A student
// (the loaded model under a quantization scheme, quantized once per scheme in the job and
// kept) adds its own top-k beside the teacher's and KL(teacher || student) at the slider's T.
#include <QList>
#include <QString>
#include <QWidget>
#include <memory>
#include <optional>

#include "engine/eval/soft_labels.h"
#include "ui/engine_types.h"
#include "ui/labs/lab_measurements.h"

class QComboBox;
class QLabel;
class QSlider;
class QSpinBox;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
class PromptFollower;
class SoftLabelsPanel;

class SoftLabelsLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kJob = QStringLiteral("soft-labels");
    static constexpr int kDebounceMs = 300;
    // The slider's integer steps are hundredths of a temperature: 0.25 .. 4.00.
    static constexpr int kTemperatureSteps = 100;
    static constexpr int kMinTemperatureStep = 25;
    static constexpr int kMaxTemperatureStep = 400;
    static constexpr int kDefaultTopK = 5;

    explicit SoftLabelsLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    SoftLabelsPanel& panel() const { return *panel_; }
    QSlider& temperature_slider() const { return *temperature_slider_; }
    QSpinBox& top_k_box() const { return *top_k_box_; }
    QLabel& ratio_line() const { return *ratio_line_; }
    // The student choice: "none" (no scheme) first, then quantization schemes.
    QComboBox& student_box() const { return *student_box_; }
    SoftLabelsPanel& student_panel() const { return *student_panel_; }
    QLabel& kl_line() const { return *kl_line_; }
    // The chosen scheme in parse_quant_scheme's syntax; empty for none.
    QString student_scheme() const;
    double temperature() const;
    // The pass behind the chart (absent until one finished) and the labels it shows.
    const std::optional<NextTokenLogits>& logits() const { return logits_; }
    // The teacher's labels (with KL(teacher || student) when the pass had a student).
    const std::optional<SoftLabels>& labels() const { return labels_; }
    const std::optional<SoftLabels>& student_labels() const { return student_labels_; }
    const QString& analysed_prompt() const;

    // Schedules a pass over `prompt` once typing pauses for kDebounceMs (if shown).
    void set_prompt(const QString& prompt);
    // Starts the pass over the current prompt now (replacing a running one).
    void run_now();

Q_SIGNALS:
    void labels_changed();

private:
    bool logits_are_current() const;
    void build_layout();
    // The pass over `prompt` with the chosen student (if any), for the follower to run.
    // Runs the distribution job for `prompt` under the current student choice.
    void start_job(const std::string& prompt);
    void set_model(const ModelSummary& model);
    void connect_controller();
    void show_logits(const NextTokenLogits& logits);
    // Recomputes the distribution at the slider's T and the box's k from the cached logits.
    void show_distribution();
    // The student's top-k and the KL line, at the teacher labels' T and k.
    void show_student();

    EngineController& controller_;
    QSlider* temperature_slider_;
    QLabel* temperature_label_;
    QSpinBox* top_k_box_;
    QLabel* status_;
    QLabel* ratio_line_;
    QComboBox* student_box_;
    QLabel* kl_line_;
    SoftLabelsPanel* panel_;
    SoftLabelsPanel* student_panel_;
    PromptFollower* follower_;
    // Filled and read by jobs on the worker thread only; a new model gets a new one.
    std::shared_ptr<StudentModels> students_;
    std::optional<NextTokenLogits> logits_;
    std::optional<SoftLabels> labels_;
    std::optional<SoftLabels> student_labels_;
};

}  // namespace inferscope::ui
