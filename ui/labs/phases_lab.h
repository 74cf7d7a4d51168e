#pragma once
// The prefill-vs-decode tab: one click measures the two tables on the loaded
// model (prefill cost against the prompt length, decode step cost against the cache length)
// and shows them as a table and a chart; Cancel stops a running measurement.
#include <QList>
#include <QWidget>

#include "engine/instruments/prefill_decode.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;

namespace inferscope::ui {

class ChartPanel;
class EngineController;
class PhasesChartPanel;

class PhasesLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kJob = QStringLiteral("phases");

    explicit PhasesLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    QPushButton& measure_button() const { return *measure_button_; }
    QPushButton& cancel_button() const { return *cancel_button_; }
    QLabel& status() const { return *status_; }
    PhasesChartPanel& chart_panel() const { return *chart_; }
    QTableWidget& table() const { return *table_; }
    const PhasesReport& report() const { return report_; }

    // The lengths measured (pairs of prompt length and cache length) and the repetitions
    // (which the Repeats box then shows).
    void set_options(const PhasesOptions& options);
    QSpinBox& repeats_box() const { return *repeats_; }
    // options() without the pairs that do not fit in `context_tokens`.
    PhasesOptions options_fitting(int context_tokens) const;
    void measure();

Q_SIGNALS:
    void report_changed();

private:
    void connect_controller();
    void show_report(const PhasesReport& report);
    void end_run();

    EngineController& controller_;
    QPushButton* measure_button_;
    QPushButton* cancel_button_;
    QSpinBox* repeats_;
    QProgressBar* progress_;
    QLabel* status_;
    QTableWidget* table_;
    PhasesChartPanel* chart_;
    PhasesOptions options_;
    PhasesReport report_;
    int repetitions_ = 0;  // of the run whose report is shown
};

}  // namespace inferscope::ui
