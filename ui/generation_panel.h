#pragma once
// The prompt, the sampling controls, Generate / Stop, the streamed output and the live
// numbers (time to first token, tokens/s, context length, KV bytes).
#include <QWidget>

#include "ui/engine_types.h"

class QCheckBox;
class QDoubleSpinBox;
class QLabel;
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

    void save_settings(QSettings& settings) const;
    void restore_settings(const QSettings& settings);

    // Live updates from the engine.
    void start_output(const QString& prompt_text);
    void append_output(const QString& text);
    void add_steps(const QVector<StepRecord>& steps);
    void show_report(const GenerationReport& report);

    QPlainTextEdit* prompt_edit() const { return prompt_; }
    QPlainTextEdit* output_view() const { return output_; }

signals:
    void generate_requested();
    void stop_requested();

private:
    QWidget* build_examples();
    QWidget* build_sampling_controls();
    QWidget* build_stats();
    void update_stats();

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

    bool model_ready_ = false;
    bool running_ = false;
    double prefill_ms_ = 0;
    double decode_ms_ = 0;
    int decode_steps_ = 0;
    bool first_token_seen_ = false;
    double ttft_ms_ = -1;
};

}  // namespace inferscope::ui
