#pragma once
// The reference request trace replayed against a serving engine: the share of requests whose
// time to first token, and whose end-to-end latency, is within each latency (both from the
// request's arrival), with the percentiles and throughput in a line under the title.
#include "engine/remote/trace_replay.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class RemoteReplayPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit RemoteReplayPanel(QWidget* parent = nullptr);

    void set_report(const remote::ReplayReport& report);
    // "32 requests (0 failed): TTFT p50 … ms, end-to-end p50 … ms, … tokens/s".
    QString figures() const { return figures_; }

private:
    QLineSeries* ttft_;
    QLineSeries* end_to_end_;
    QString figures_;
};

}  // namespace inferscope::ui
