#pragma once
// Static vs continuous batching on the same request trace, simulated with a step-cost model
// measured on the loaded model and, once run for real on the engine, measured: the
// distribution of per-request end-to-end latency (the share of requests finished within
// each latency) for each policy and mode, and each run's throughput and median latency in
// lines under the title.
#include <optional>

#include "ui/labs/lab_measurements.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class ServingReplayPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit ServingReplayPanel(QWidget* parent = nullptr);

    void set_result(const ReplayResult& result);
    // The same trace served for real; cleared when the trace changes.
    void set_real_result(const ReplayResult& result);
    void clear_real_result();
    // "Simulated: static 702 tok/s, median 1.06 s; continuous …" for the runs shown.
    QString figures() const;
    // The chart's title without the figures.
    static QString base_title();
    PlotData plot_data() const override;

private:
    void update_figures();
    QStringList figure_lines() const;  // one per mode shown
    void style_series(bool dark) override;

    QLineSeries* static_;
    QLineSeries* continuous_;
    QLineSeries* static_real_;
    QLineSeries* continuous_real_;
    std::optional<ReplayResult> simulated_;
    std::optional<ReplayResult> real_;
};

}  // namespace inferscope::ui
