#include "ui/panels/batch_curve_panel.h"

#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

namespace inferscope::ui {

BatchCurvePanel::BatchCurvePanel(Metric metric, QWidget* parent)
    : ChartPanel(metric == Metric::AggregateTokensPerS ? QStringLiteral("batch-throughput") : QStringLiteral("batch-step-latency"),
                 parent),
      metric_(metric),
      curve_(new QLineSeries()),
      knee_(new QScatterSeries()) {
    const bool throughput = metric == Metric::AggregateTokensPerS;
    chart()->setTitle(throughput ? tr("Aggregate decode throughput vs batch size") : tr("Per-request step time vs batch size"));
    curve_->setName(throughput ? tr("tokens/s (all requests)") : tr("ms per step (each request)"));
    curve_->setPointsVisible(true);
    knee_->setName(tr("knee"));
    knee_->setMarkerSize(14);
    auto* x = new QValueAxis();
    x->setTitleText(tr("batch size B (sequences)"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(throughput ? tr("aggregate tokens/s") : tr("ms per step"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{curve_, knee_}) {
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    offer_log_scale(Qt::Horizontal, 2);  // the sweep doubles B: evenly spaced on a log2 axis
    fit_axes(64, 1);
}

double BatchCurvePanel::value(Metric metric, const BatchBenchRow& row) {
    return metric == Metric::AggregateTokensPerS ? row.decode_tokens_per_s : row.ms_per_step;
}

void BatchCurvePanel::set_rows(const std::vector<BatchBenchRow>& rows, int knee_batch) {
    QList<QPointF> points;
    QList<QPointF> knee;
    spread_.clear();
    for (const BatchBenchRow& row : rows) {
        points.append(QPointF(row.batch, value(metric_, row)));
        spread_.append(QPointF(row.batch, row.decode_tokens_per_s_stddev));
        if (row.batch == knee_batch) knee.append(points.back());
    }
    curve_->replace(points);
    knee_->replace(knee);
    fit_axes(64, 1);
}

void BatchCurvePanel::append_exported_series(PlotData& data) const {
    if (metric_ != Metric::AggregateTokensPerS) return;
    data.series.push_back({tr("tokens/s standard deviation"), QVector<QPointF>(spread_.begin(), spread_.end())});
}

}  // namespace inferscope::ui
