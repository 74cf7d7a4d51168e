#pragma once
// The prompt, the sampling controls, Generate / Stop, the streamed output and the live
// numbers (time to first token, tokens/s, context length, KV bytes).
#include <QWidget>

#include "ui/engine_types.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;
class QSettings;

namespace inferscope::ui {

class GenerationPanel : public QWidget {
    Q_OBJECT
public:
    explicit GenerationPanel(QWidget* parent = nullptr);

    GenerationRequest request() const;
    void set_prompt(const QString& prompt);
    void set_n_predict(int n);
    void set_running(bool running);
    void set_model_ready(bool ready);
    // Empties the output and its figures: they belong to the previous model.
    void clear_results();

    void save_settings(QSettings& settings) const;
    void restore_settings(const QSettings& settings);

    // Live updates from the engine.
    void start_output(const QString& prompt_text);
    void append_output(const QString& text);
    void add_steps(const QVector<StepRecord>& steps);
    void show_report(const GenerationReport& report);

    // The model's chat template (none: raw completion only). Starts a new conversation.
    void set_chat_template(const ModelSummary& model);
    bool chat_mode() const;
    // A conversation with earlier turns is under way: its charts keep growing across turns.
    bool continuing_conversation() const { return chat_mode() && !history_.isEmpty(); }
    // What the labs should analyse: the prompt as typed, or (chat) the conversation with the
    // typed message rendered by the template, as the model will see it.
    QString lab_prompt() const;
    const QVector<ChatMessageText>& history() const { return history_; }
    QString last_rendered_prompt() const { return last_rendered_; }

    QPlainTextEdit* prompt_edit() const { return prompt_; }
    // "6223.0 tokens/s (0.16 ms/token)": the decode speed beside the controls.
    QString decode_speed_text() const;
    QPlainTextEdit* output_view() const { return output_; }
    QCheckBox* chat_toggle() const { return chat_; }

Q_SIGNALS:
    void generate_requested();
    void stop_requested();
    // The text the labs analyse changed (typing, a turn, the chat toggle).
    void lab_prompt_changed(const QString& text);

private:
    QWidget* build_examples();
    QWidget* build_sampling_controls();
    QWidget* build_stats();
    QWidget* build_chat_controls();
    void new_chat();
    void show_rendered_prompt();
    QVector<ChatMessageText> request_history() const;
    void update_stats();
    void reset_figures();  // time to first token, speed, context and KV figures back to "none yet"

    QPlainTextEdit* prompt_;
    QPlainTextEdit* output_;
    QSpinBox* n_predict_;
    QDoubleSpinBox* temperature_;
    QSpinBox* top_k_;
    QDoubleSpinBox* top_p_;
    QDoubleSpinBox* min_p_;
    QDoubleSpinBox* repeat_penalty_;
    QSpinBox* seed_;
    QCheckBox* compare_recompute_;
    QPushButton* generate_;
    QPushButton* stop_;
    QLabel* ttft_;
    QLabel* speed_;
    QLabel* context_;
    QLabel* kv_bytes_;
    QCheckBox* chat_;
    QLineEdit* system_prompt_;
    QPushButton* new_chat_;
    QPushButton* show_rendered_;
    QLabel* chat_status_;
    QString chat_template_, bos_text_, eos_text_;
    bool chat_model_known_ = false;               // set_chat_template has been called
    QString chat_model_path_, chat_model_weights_;  // what the template came with
    QVector<ChatMessageText> history_;  // the turns so far (not the system prompt)
    QString pending_user_message_;
    QString last_rendered_;
    int last_rendered_tokens_ = 0;

    bool model_ready_ = false;
    bool running_ = false;
    double prefill_ms_ = 0;
    double decode_ms_ = 0;
    int decode_steps_ = 0;
    double report_ms_per_token_ = -1;  // the finished run's figure; -1 while it runs
    bool first_token_seen_ = false;
    double ttft_ms_ = -1;
};

}  // namespace inferscope::ui
