#include "ui/panels/serving_replay_panel.h"
#include "ui/number_format.h"

#include <QLineSeries>
#include <QPen>
#include <QValueAxis>

namespace inferscope::ui {
namespace {

QList<QPointF> to_points(const ServingReport& report) {
    QList<QPointF> points;
    for (const auto& [latency_s, percent] : latency_distribution(report)) points.append(QPointF(latency_s, percent));
    return points;
}

// "702 vs 1372 tok/s, median 1.06 vs 0.47 s"
QString comparison(const ReplayResult& r) {
    return ServingReplayPanel::tr("%1 vs %2 tok/s, median %3 vs %4 s")
        .arg(r.static_run.throughput_tokens_per_s(), 0, 'f', 0)
        .arg(r.continuous_run.throughput_tokens_per_s(), 0, 'f', 0)
        .arg(format_number(r.static_run.percentile(&RequestMetrics::end_to_end_s, 50), 3))
        .arg(format_number(r.continuous_run.percentile(&RequestMetrics::end_to_end_s, 50), 3));
}

}  // namespace

ServingReplayPanel::ServingReplayPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("batching-replay"), parent),
      static_(new QLineSeries()),
      continuous_(new QLineSeries()),
      static_real_(new QLineSeries()),
      continuous_real_(new QLineSeries()) {
    static_->setName(tr("static batching (simulated)"));
    continuous_->setName(tr("continuous batching (simulated)"));
    static_real_->setName(tr("static batching (real)"));
    continuous_real_->setName(tr("continuous batching (real)"));
    auto* x = new QValueAxis();
    x->setTitleText(tr("end-to-end latency (s)"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("requests done (%)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{static_, continuous_, static_real_, continuous_real_}) {
        // The real runs are lines only, so that their dashes show.
        s->setPointsVisible(s == static_ || s == continuous_);
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    style_series(false);
    update_title();
    fit_axes(1, 100);
}

void ServingReplayPanel::style_series(bool dark) {
    // Each real run is drawn dashed in its simulated twin's colour.
    const QColor static_color = dark ? QColor(0xFF, 0xB7, 0x4D) : QColor(0xE6, 0x51, 0x00);
    const QColor continuous_color = dark ? QColor(0x4F, 0xC3, 0xF7) : QColor(0x15, 0x65, 0xC0);
    const auto pen = [](const QColor& color, Qt::PenStyle style) {
        QPen p(color);
        p.setWidthF(style == Qt::SolidLine ? 2.0 : 2.5);
        p.setStyle(style);
        return p;
    };
    static_->setPen(pen(static_color, Qt::SolidLine));
    continuous_->setPen(pen(continuous_color, Qt::SolidLine));
    static_real_->setPen(pen(static_color, Qt::DashLine));
    continuous_real_->setPen(pen(continuous_color, Qt::DashLine));
}

void ServingReplayPanel::set_result(const ReplayResult& result) {
    simulated_ = result;
    static_->replace(to_points(result.static_run));
    continuous_->replace(to_points(result.continuous_run));
    update_title();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::set_real_result(const ReplayResult& result) {
    real_ = result;
    static_real_->replace(to_points(result.static_run));
    continuous_real_->replace(to_points(result.continuous_run));
    update_title();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::clear_real_result() {
    if (!real_) return;
    real_.reset();
    static_real_->clear();
    continuous_real_->clear();
    update_title();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::update_title() {
    // Kept short: with both modes the title holds four throughputs and four latencies.
    QString title = real_ ? tr("Static vs continuous") : tr("Static vs continuous batching");
    if (simulated_) title += tr(" \u2014 simulated: %1").arg(comparison(*simulated_));
    if (real_) title += tr(" \u2014 real: %1").arg(comparison(*real_));
    if (!simulated_ && !real_) title += tr(" (simulated)");
    chart()->setTitle(title);
}

}  // namespace inferscope::ui
