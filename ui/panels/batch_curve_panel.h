#pragma once
// One batch-size curve: a metric of the batched decode (aggregate tokens/s, or the ms each
// request waits per step) against the batch size B, one point per measured B (the mean of
// the repetitions), with the knee marked; the throughput curve exports the spread too.
#include <vector>

#include "engine/bench/batch_bench.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;
class QScatterSeries;

namespace inferscope::ui {

class BatchCurvePanel : public ChartPanel {
    Q_OBJECT
public:
    enum class Metric { AggregateTokensPerS, MsPerStep };

    BatchCurvePanel(Metric metric, QWidget* parent = nullptr);

    static double value(Metric metric, const BatchBenchRow& row);
    // `rows` sorted by batch size; `knee_batch` 0 when there is none.
    void set_rows(const std::vector<BatchBenchRow>& rows, int knee_batch);

protected:
    // Throughput: "tokens/s standard deviation" per measured B.
    void append_exported_series(PlotData& data) const override;

private:
    Metric metric_;
    QList<QPointF> spread_;  // (B, standard deviation of the aggregate tokens/s)
    QLineSeries* curve_;
    QScatterSeries* knee_;
};

}  // namespace inferscope::ui
