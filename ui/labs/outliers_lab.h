#pragma once
// The activation-outliers tab: follows the generation prompt as the user types (debounced;
// a newer prompt cancels the running analysis) and shows, for the layer chosen by a slider,
// the log2 histogram of the per-dimension maxima, the maxima over the dimensions with the
// top ones labelled, and the INT8 table (levels used and error under a tensor-wide scale,
// with the top-k dimensions set aside, per token and per channel); across layers, a heat
// strip of the dimensions with the largest maxima.
#include <QList>
#include <QWidget>
#include <optional>

#include "engine/probes/outlier_analysis.h"
#include "ui/engine_types.h"

class QLabel;
class QSlider;
class QTableWidget;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
class OutlierHeatStripPanel;
class OutlierHistogramPanel;
class OutlierMaximaPanel;
class PromptFollower;

class OutliersLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kJob = QStringLiteral("outliers");
    static constexpr int kDebounceMs = 300;
    static constexpr int kTopDimensions = 4;

    explicit OutliersLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    QSlider& layer_slider() const { return *layer_slider_; }
    OutlierHistogramPanel& histogram_panel() const { return *histogram_; }
    OutlierMaximaPanel& maxima_panel() const { return *maxima_; }
    OutlierHeatStripPanel& heat_strip_panel() const { return *heat_strip_; }
    QTableWidget& int8_table() const { return *int8_table_; }
    const std::optional<OutlierReport>& report() const { return report_; }
    const QString& analysed_prompt() const;

    // The analysis options the next run uses (the INT8 layer is the slider's).
    OutlierAnalysisOptions analysis_options() const;
    // Schedules an analysis of `prompt` once typing pauses for kDebounceMs (if shown).
    void set_prompt(const QString& prompt);
    // Starts the analysis of the current prompt now (replacing a running one).
    void run_now();

Q_SIGNALS:
    void report_changed();

private:
    void setup_int8_table();
    bool report_is_current() const;
    void set_model(const ModelSummary& model);
    void connect_controller();
    void show_layer(int layer);
    void show_int8(const OutlierReport& report);
    // Runs the analysis job for `prompt` under the current layer choice.
    void start_job(const std::string& prompt);
    void show_report(const OutlierReport& report);

    EngineController& controller_;
    QSlider* layer_slider_;
    QLabel* layer_label_;
    QLabel* status_;
    QLabel* int8_summary_;
    QTableWidget* int8_table_;
    OutlierHistogramPanel* histogram_;
    OutlierMaximaPanel* maxima_;
    OutlierHeatStripPanel* heat_strip_;
    PromptFollower* follower_;
    std::optional<OutlierReport> report_;
};

}  // namespace inferscope::ui
