#pragma once
// The soft-labels tab: distillation's view of the loaded model as a teacher. Follows the
// generation prompt as the user types (debounced; a newer prompt cancels the running pass),
// runs one forward pass per prompt for the next-token logits, and shows the top-k
// probabilities at the temperature of a slider. Moving the slider or the k box recomputes
// the distribution from the cached logits on the UI thread: no new forward pass.
#include <QList>
#include <QString>
#include <QTimer>
#include <QWidget>
#include <optional>

#include "engine/eval/soft_labels.h"
#include "ui/engine_types.h"
#include "ui/labs/lab_measurements.h"

class QLabel;
class QSlider;
class QSpinBox;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
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
    double temperature() const;
    // The pass behind the chart (absent until one finished) and the labels it shows.
    const std::optional<NextTokenLogits>& logits() const { return logits_; }
    const std::optional<SoftLabels>& labels() const { return labels_; }
    const QString& analysed_prompt() const { return analysed_prompt_; }

    // Schedules a pass over `prompt` once typing pauses for kDebounceMs (if shown).
    void set_prompt(const QString& prompt);
    // Starts the pass over the current prompt now (replacing a running one).
    void run_now();

signals:
    void labels_changed();

protected:
    // Passes run only while the tab is shown; showing it catches up with the prompt.
    void showEvent(QShowEvent* event) override;

private:
    bool logits_are_current() const { return logits_ && analysed_prompt_ == prompt_; }
    void set_model(const ModelSummary& model);
    void connect_controller();
    // Recomputes the distribution at the slider's T and the box's k from the cached logits.
    void show_distribution();

    EngineController& controller_;
    QSlider* temperature_slider_;
    QLabel* temperature_label_;
    QSpinBox* top_k_box_;
    QLabel* status_;
    QLabel* ratio_line_;
    SoftLabelsPanel* panel_;
    QTimer debounce_;
    QString prompt_;
    QString running_prompt_;
    QString analysed_prompt_;
    std::optional<NextTokenLogits> logits_;
    std::optional<SoftLabels> labels_;
};

}  // namespace inferscope::ui
