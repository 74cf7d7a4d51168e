#pragma once
// Prefill vs decode per token: the prefill's cost per prompt token against the prompt
// length, and a decode step's cost (one token) against the cache length. Prefill runs a
// whole prompt through each weight read, so its per-token cost is a fraction of a step's.
#include "engine/instruments/prefill_decode.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class PhasesChartPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit PhasesChartPanel(QWidget* parent = nullptr);

    void set_report(const PhasesReport& report);

private:
    QLineSeries* prefill_;
    QLineSeries* decode_;
};

}  // namespace inferscope::ui
