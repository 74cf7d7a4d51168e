#pragma once
// Static vs continuous batching on the same request trace, simulated with a step-cost model
// measured on the loaded model: the distribution of per-request end-to-end latency (the
// share of requests finished within each latency) for each policy, and both throughputs in
// the title.
#include "ui/labs/lab_measurements.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class ServingReplayPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit ServingReplayPanel(QWidget* parent = nullptr);

    void set_result(const ReplayResult& result);

private:
    QLineSeries* static_;
    QLineSeries* continuous_;
};

}  // namespace inferscope::ui
