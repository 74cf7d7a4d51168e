#pragma once
// The speculative-decoding tab: the analytic speed-up curves (SpeculativePanel, sliders for
// alpha, gamma and c) and, below the controls of a draft (the loaded model under a
// quantization scheme, or a second GGUF file), gamma, a token count and a prompt, a Measure
// button that runs the loaded model against the draft for real as a lab job (greedy: the
// output is the target's own greedy output). The measured acceptance, tokens per verify,
// cost ratio and speed-up are shown, the measured point joins the chart and the curves move
// to the measured alpha and c.
#include <QList>
#include <QString>
#include <QWidget>
#include <optional>

#include "ui/labs/lab_measurements.h"

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
class SpeculativePanel;
struct ModelSummary;

class SpeculativeLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kJob = QStringLiteral("speculative/measure");
    static inline const QString kDefaultScheme = QStringLiteral("int4:row");

    explicit SpeculativeLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    SpeculativePanel& panel() const { return *panel_; }
    QComboBox& draft_box() const { return *draft_box_; }
    QSpinBox& gamma_box() const { return *gamma_box_; }
    QSpinBox& tokens_box() const { return *tokens_box_; }
    QSpinBox& repeats_box() const { return *repeats_box_; }
    // "", or a line flagging a speed-up above what the tokens per verify allow, or too noisy to read.
    static QString speedup_warning(const SpeculativeRunResult& result);
    QLineEdit& prompt_edit() const { return *prompt_edit_; }
    QPushButton& measure_button() const { return *measure_button_; }
    QPushButton& cancel_button() const { return *cancel_button_; }
    QLabel& status() const { return *status_; }
    QLabel& results() const { return *results_; }
    // The last measurement shown (absent until one finished).
    const std::optional<SpeculativeRunResult>& result() const { return result_; }

    // The prompt used when the prompt box is empty (MainWindow passes the generation prompt).
    void set_generation_prompt(const QString& prompt);
    // Adds a second GGUF file as the draft and selects it (what the "Second file…" entry's
    // dialog does).
    void set_draft_file(const QString& path);
    // What Measure would run now.
    SpeculativeRunSettings settings() const;
    void measure();

Q_SIGNALS:
    void result_changed();

private:
    QWidget* build_controls();
    // Disables the draft schemes whose block does not divide the model's rows.
    void fit_drafts_to(const ModelSummary& model);
    void connect_controller();
    void choose_draft_file();
    void show_result(const SpeculativeRunResult& result);
    void end_run(const QString& status);

    EngineController& controller_;
    QComboBox* draft_box_;
    QSpinBox* gamma_box_;
    QSpinBox* tokens_box_;
    QSpinBox* repeats_box_;
    QLineEdit* prompt_edit_;
    QPushButton* measure_button_;
    QPushButton* cancel_button_;
    QProgressBar* progress_;
    QLabel* status_;
    QLabel* results_;
    SpeculativePanel* panel_;
    QString generation_prompt_;
    std::optional<SpeculativeRunResult> result_;
};

}  // namespace inferscope::ui
