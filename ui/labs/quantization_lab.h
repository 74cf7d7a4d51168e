#pragma once
// The quantization lab tab: a bit-width slider, a granularity choice with a group size, and
// a format choice (INT, NF4, the GGUF block formats). Moving a control re-runs the
// per-matrix error analysis of the loaded model in the background (debounced; a newer
// setting cancels the running one; only while the tab is shown). "Measure quality" scores
// the quantized model against the unquantized one on a bundled text (perplexity, KL, top-1
// agreement, the prompt battery) and adds a row to the results table; "Generate with these
// weights" makes the main generation run the quantized model, until restored.
#include <QList>
#include <QString>
#include <QTimer>
#include <QWidget>
#include <optional>
#include <vector>

#include "engine/quant/scheme.h"
#include "ui/engine_types.h"
#include "ui/labs/quant_measurements.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QTableWidget;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
class QuantErrorPanel;
class QuantQualityPanel;

class QuantizationLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kAnalysisJob = QStringLiteral("quantization/errors");
    static inline const QString kQualityJob = QStringLiteral("quantization/quality");
    static inline const QString kWeightsJob = QStringLiteral("quantization/weights");
    static constexpr int kDebounceMs = 250;

    explicit QuantizationLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    QuantErrorPanel& error_panel() const { return *error_panel_; }
    QuantQualityPanel& quality_panel() const { return *quality_panel_; }
    QSlider& bits_slider() const { return *bits_slider_; }
    QComboBox& format_box() const { return *format_; }
    QComboBox& granularity_box() const { return *granularity_; }
    QComboBox& group_size_box() const { return *group_size_; }
    QComboBox& order_box() const { return *order_; }
    QPushButton& measure_button() const { return *measure_; }
    QPushButton& generate_button() const { return *use_weights_; }
    QPushButton& restore_button() const { return *restore_; }
    QPushButton& cancel_button() const { return *cancel_; }
    QTableWidget& results_table() const { return *table_; }

    // The scheme the controls describe, in parse_quant_scheme's grammar ("int4:g128", "nf4:64", "q4_k").
    QString scheme_text() const;
    // The scheme whose analysis the chart shows (absent until one finished).
    const std::optional<QuantReport>& report() const { return report_; }
    quint64 analysis_job() const { return analysis_job_; }
    const std::vector<QualityRow>& quality_rows() const { return quality_rows_; }
    const QualitySettings& quality_settings() const { return quality_settings_; }

    // Starts the analysis of the current scheme now (replacing a running one).
    void run_now();
    void measure_quality();
    void use_quantized_weights();
    void restore_weights();
    // Cancels this tab's running jobs.
    void cancel();

Q_SIGNALS:
    void report_changed();
    void quality_rows_changed();

protected:
    // The analysis runs only while the tab is shown; showing it catches up with the controls.
    void showEvent(QShowEvent* event) override;

private:
    QWidget* build_scheme_controls();
    QWidget* build_quality_controls();
    void connect_controls();
    void connect_controller();
    void schedule_analysis();
    void set_model(const ModelSummary& model);
    // Shows a job's progress and ends it: the status line (a non-empty message), the bar and
    // the buttons.
    void watch(LabJobWatcher& job);
    void on_job_ended(const QString& message);
    void show_report(const QuantReport& report);
    void use_weights(const QuantizedModel& quantized);
    void append_quality_row(const QualityRow& row);
    void update_enabled();
    // Disables the formats and group sizes whose block does not divide every row of the
    // model's matrices (stories260K's FFN rows hold 172 weights), saying why in the tooltip.
    void fit_choices_to(const ModelSummary& model);
    bool analysis_is_current() const;

    EngineController& controller_;
    QComboBox* format_;
    QSlider* bits_slider_;
    QLabel* bits_label_;
    QComboBox* granularity_;
    QComboBox* group_size_;
    QComboBox* order_;
    QProgressBar* progress_;
    QPushButton* cancel_;
    QLabel* status_;
    QuantErrorPanel* error_panel_;
    QPushButton* measure_;
    QPushButton* use_weights_;
    QPushButton* restore_;
    QLabel* text_note_;
    QTableWidget* table_;
    QuantQualityPanel* quality_panel_;
    QTimer debounce_;
    QualitySettings quality_settings_;
    QString model_identity_;   // path of the model the results belong to ("" for the built-in one)
    QString running_scheme_;   // of the running analysis
    QString weights_scheme_;   // of the running "Generate with these weights" job
    quint64 analysis_job_ = 0;
    std::optional<QuantReport> report_;
    std::vector<QualityRow> quality_rows_;
};

}  // namespace inferscope::ui
