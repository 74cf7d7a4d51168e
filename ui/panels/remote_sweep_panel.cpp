#include "ui/panels/remote_sweep_panel.h"

#include <QLineSeries>
#include <QValueAxis>

namespace inferscope::ui {

RemoteSweepPanel::RemoteSweepPanel(Metric metric, QWidget* parent)
    : ChartPanel(
          metric == Metric::AggregateTokensPerS ? QStringLiteral("server-throughput") : QStringLiteral("server-inter-token"),
          parent),
      metric_(metric),
      curve_(new QLineSeries()) {
    const bool throughput = metric == Metric::AggregateTokensPerS;
    chart()->setTitle(throughput ? tr("Server: aggregate tokens/s vs streams at once (remote)")
                                 : tr("Server: inter-token latency vs streams at once (remote)"));
    curve_->setName(throughput ? tr("tokens/s (all streams)") : tr("inter-token ms (median over every gap)"));
    curve_->setPointsVisible(true);
    auto* x = new QValueAxis();
    x->setTitleText(tr("streams at once"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(throughput ? tr("aggregate tokens/s") : tr("inter-token latency (ms)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    chart()->addSeries(curve_);
    curve_->attachAxis(x);
    curve_->attachAxis(y);
    set_axes(x, y);
    offer_log_scale(Qt::Horizontal, 2);  // the sweep doubles the streams
    fit_axes(8, 1);
}

double RemoteSweepPanel::value(Metric metric, const remote::ConcurrencyLevel& level) {
    return metric == Metric::AggregateTokensPerS ? level.tokens_per_s : level.itl_ms_median;
}

void RemoteSweepPanel::set_levels(const std::vector<remote::ConcurrencyLevel>& levels) {
    QList<QPointF> points;
    for (const remote::ConcurrencyLevel& level : levels) points.append(QPointF(level.streams, value(metric_, level)));
    curve_->replace(points);
    fit_axes(8, 1);
}

}  // namespace inferscope::ui
