#pragma once
// One curve of a concurrency sweep against a serving engine: aggregate tokens/s, or the
// median inter-token latency each request sees, against the number of streams at once.
#include <vector>

#include "engine/remote/stream_bench.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class RemoteSweepPanel : public ChartPanel {
    Q_OBJECT
public:
    enum class Metric { AggregateTokensPerS, InterTokenMs };

    explicit RemoteSweepPanel(Metric metric, QWidget* parent = nullptr);

    static double value(Metric metric, const remote::ConcurrencyLevel& level);
    void set_levels(const std::vector<remote::ConcurrencyLevel>& levels);

private:
    Metric metric_;
    QLineSeries* curve_;
};

}  // namespace inferscope::ui
