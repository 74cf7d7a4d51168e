#include "ui/panels/serving_replay_panel.h"

#include <QLineSeries>
#include <QValueAxis>

namespace inferscope::ui {
namespace {

QList<QPointF> to_points(const ServingReport& report) {
    QList<QPointF> points;
    for (const auto& [latency_s, percent] : latency_distribution(report)) points.append(QPointF(latency_s, percent));
    return points;
}

}  // namespace

ServingReplayPanel::ServingReplayPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("batching-replay"), parent), static_(new QLineSeries()), continuous_(new QLineSeries()) {
    chart()->setTitle(tr("Static vs continuous batching (simulated)"));
    static_->setName(tr("static batching"));
    continuous_->setName(tr("continuous batching"));
    auto* x = new QValueAxis();
    x->setTitleText(tr("end-to-end latency (s)"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("requests done (%)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{static_, continuous_}) {
        s->setPointsVisible(true);
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    fit_axes(1, 100);
}

void ServingReplayPanel::set_result(const ReplayResult& result) {
    static_->replace(to_points(result.static_run));
    continuous_->replace(to_points(result.continuous_run));
    chart()->setTitle(tr("Static vs continuous batching (simulated): %1 vs %2 tokens/s, median latency %3 s vs %4 s")
                          .arg(result.static_run.throughput_tokens_per_s(), 0, 'f', 1)
                          .arg(result.continuous_run.throughput_tokens_per_s(), 0, 'f', 1)
                          .arg(result.static_run.percentile(&RequestMetrics::end_to_end_s, 50), 0, 'f', 3)
                          .arg(result.continuous_run.percentile(&RequestMetrics::end_to_end_s, 50), 0, 'f', 3));
    fit_axes(0.001, 100);
}

}  // namespace inferscope::ui
