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

// "702 tok/s, median 1.06 s"
QString run_figures(const ServingReport& run) {
    return ServingReplayPanel::tr("%1 tok/s, median %2 s")
        .arg(run.throughput_tokens_per_s(), 0, 'f', 0)
        .arg(format_number(run.percentile(&RequestMetrics::end_to_end_s, 50), 3));
}

}  // namespace

ServingReplayPanel::ServingReplayPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("batching-replay"), parent),
      static_(new QLineSeries()),
      continuous_(new QLineSeries()),
      static_real_(new QLineSeries()),
      continuous_real_(new QLineSeries()) {
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
    set_y_ceiling(100);
    static_->setName(tr("static batching (simulated)"));
    continuous_->setName(tr("continuous batching (simulated)"));
    static_real_->setName(tr("static batching (real)"));
    continuous_real_->setName(tr("continuous batching (real)"));
    style_series(false);
    update_figures();
    fit_axes(1, 100);
}

void ServingReplayPanel::style_series(bool dark) {
    // Static warm, continuous cool; the real runs dashed and in a deeper shade of their
    // simulated twin's hue, so the four legend entries differ by colour as well as by dash.
    const QColor static_simulated = dark ? QColor(0xFF, 0xCC, 0x80) : QColor(0xFB, 0x8C, 0x00);
    const QColor static_real = dark ? QColor(0xFF, 0x70, 0x43) : QColor(0xB7, 0x1C, 0x1C);
    const QColor continuous_simulated = dark ? QColor(0x81, 0xD4, 0xFA) : QColor(0x29, 0xB6, 0xF6);
    const QColor continuous_real = dark ? QColor(0x7E, 0x57, 0xC2) : QColor(0x1A, 0x23, 0x7E);
    const auto pen = [](const QColor& color, Qt::PenStyle style) {
        QPen p(color);
        p.setWidthF(style == Qt::SolidLine ? 2.0 : 2.5);
        p.setStyle(style);
        return p;
    };
    static_->setPen(pen(static_simulated, Qt::SolidLine));
    continuous_->setPen(pen(continuous_simulated, Qt::SolidLine));
    static_real_->setPen(pen(static_real, Qt::DashLine));
    continuous_real_->setPen(pen(continuous_real, Qt::DashLine));
}

void ServingReplayPanel::set_result(const ReplayResult& result) {
    simulated_ = result;
    static_->replace(to_points(result.static_run));
    continuous_->replace(to_points(result.continuous_run));
    update_figures();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::set_real_result(const ReplayResult& result) {
    real_ = result;
    static_real_->replace(to_points(result.static_run));
    continuous_real_->replace(to_points(result.continuous_run));
    update_figures();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::clear_real_result() {
    if (!real_) return;
    real_.reset();
    static_real_->clear();
    continuous_real_->clear();
    update_figures();
    fit_axes(0.001, 100);
}

void ServingReplayPanel::update_figures() {
    // One line per mode under the title, in the chart itself, so that PNG and SVG exports carry them.
    QString title = base_title();
    for (const QString& line : figure_lines()) title += QStringLiteral("<br><small>%1</small>").arg(line.toHtmlEscaped());
    chart()->setTitle(title);
}

QString ServingReplayPanel::base_title() { return tr("Static vs continuous batching: requests done by end-to-end latency"); }

QStringList ServingReplayPanel::figure_lines() const {
    QStringList lines;
    const auto mode = [](const QString& name, const ReplayResult& result) {
        return tr("%1: static %2; continuous %3").arg(name, run_figures(result.static_run), run_figures(result.continuous_run));
    };
    if (simulated_) lines << mode(tr("Simulated"), *simulated_);
    if (real_) lines << mode(tr("Real"), *real_);
    return lines;
}

QString ServingReplayPanel::figures() const { return figure_lines().join(QStringLiteral(". ")); }

PlotData ServingReplayPanel::plot_data() const {
    PlotData data = ChartPanel::plot_data();
    data.title = base_title();
    if (simulated_ || real_) data.title += QStringLiteral(" \u2014 ") + figures();
    return data;
}

}  // namespace inferscope::ui
