#include "ui/panels/chart_panel.h"

#include "ui/panels/round_ticks.h"

#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCheckBox>
#include <QGraphicsLayout>
#include <QHBoxLayout>
#include <QLogValueAxis>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QXYSeries>
#include <algorithm>
#include <cmath>
#include <limits>

namespace inferscope::ui {

ChartPanel::ChartPanel(const QString& export_name, QWidget* parent)
    : QWidget(parent),
      export_name_(export_name),
      chart_(new QChart()),
      chart_area_(new QWidget(this)),
      view_(new QChartView(chart_, chart_area_)) {
    view_->setRenderHint(QPainter::Antialiasing);
    chart_->legend()->setAlignment(Qt::AlignBottom);
    // Qt's default margins inside and around a chart take room that a small chart needs for its plot.
    chart_->setMargins(QMargins(8, 4, 8, 4));
    chart_->layout()->setContentsMargins(2, 2, 2, 2);
    auto* area = new QVBoxLayout(chart_area_);
    area->setContentsMargins(0, 0, 0, 0);
    area->setSpacing(0);
    scale_row_ = new QHBoxLayout();
    scale_row_->addStretch(1);
    area->addLayout(scale_row_);
    area->addWidget(view_, 1);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(chart_area_);
    // The chart's own size, not its plot area: labels change the plot area, and a refit that
    // changed it again could go back and forth.
    connect(chart_, &QGraphicsWidget::geometryChanged, this, &ChartPanel::follow_chart_size);
}

void ChartPanel::follow_chart_size() {
    // About 80 px per x interval and 40 px per y interval, net of the axes' own room.
    constexpr double kAxesRoomPx = 120, kXIntervalPx = 80, kYIntervalPx = 40;
    const QSizeF size = chart_->size();
    const int x = std::clamp(static_cast<int>((size.width() - kAxesRoomPx) / kXIntervalPx), 2, 8);
    const int y = std::clamp(static_cast<int>((size.height() - kAxesRoomPx) / kYIntervalPx), 2, 8);
    if (x == x_intervals_ && y == y_intervals_) return;
    x_intervals_ = x;
    y_intervals_ = y;
    if (fitted_) fit_axes(min_x_span_, min_y_span_);
}

PlotData ChartPanel::plot_data() const {
    PlotData data;
    data.title = chart_->title();
    // Panels whose axes are not value axes (a bar chart's categories) name them on the chart.
    const QList<QAbstractAxis*> x_axes = chart_->axes(Qt::Horizontal), y_axes = chart_->axes(Qt::Vertical);
    if (x_axis_) data.x_label = current_axis(Qt::Horizontal)->titleText();
    else if (!x_axes.isEmpty()) data.x_label = x_axes.front()->titleText();
    if (y_axis_) data.y_label = current_axis(Qt::Vertical)->titleText();
    else if (!y_axes.isEmpty()) data.y_label = y_axes.front()->titleText();
    for (QAbstractSeries* series : chart_->series()) {
        if (const auto* xy = qobject_cast<const QXYSeries*>(series)) {
            data.series.push_back({xy->name(), xy->points().toVector()});
            continue;
        }
        const auto* bars = qobject_cast<const QAbstractBarSeries*>(series);
        if (bars == nullptr) continue;
        // One series per bar set: (category index, bar value).
        for (const QBarSet* set : bars->barSets()) {
            PlotSeries s{set->label(), {}};
            for (int i = 0; i < set->count(); ++i) s.points.push_back(QPointF(i, set->at(i)));
            data.series.push_back(s);
        }
    }
    if (auto* categories = x_axes.isEmpty() ? nullptr : qobject_cast<QBarCategoryAxis*>(x_axes.front())) {
        data.categories = categories->categories();
    }
    append_exported_series(data);
    return data;
}

void ChartPanel::set_dark_theme(bool dark) {
    dark_ = dark;
    chart_->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    style_series(dark);
}

void ChartPanel::offer_log_scale(Qt::Orientation orientation, double base) {
    LogAxis& log = log_axis(orientation);
    if (log.axis != nullptr || linear_axis(orientation) == nullptr) return;
    log.axis = new QLogValueAxis(chart_);
    log.axis->setBase(base);
    log.axis->setTitleText(linear_axis(orientation)->titleText());
    log.axis->setLabelFormat(linear_axis(orientation)->labelFormat());
    log.axis->setMinorTickCount(0);
    log.toggle = new QCheckBox(orientation == Qt::Horizontal ? tr("Log scale (x)") : tr("Log scale (y)"));
    log.toggle->setToolTip(tr("Draw this axis on a logarithmic scale: values spanning decades stay readable."));
    scale_row_->addWidget(log.toggle);
    connect(log.toggle, &QCheckBox::toggled, this, [this, orientation](bool on) { set_log_scale(orientation, on); });
}

bool ChartPanel::log_scale(Qt::Orientation orientation) const { return log_axis(orientation).on; }

QAbstractAxis* ChartPanel::current_axis(Qt::Orientation orientation) const {
    const LogAxis& log = log_axis(orientation);
    if (log.on) return log.axis;
    return linear_axis(orientation);
}

void ChartPanel::set_log_scale(Qt::Orientation orientation, bool on) {
    LogAxis& log = log_axis(orientation);
    if (log.axis == nullptr || log.on == on) return;
    QAbstractAxis* from = current_axis(orientation);
    log.on = on;
    QAbstractAxis* to = current_axis(orientation);
    const Qt::Alignment alignment = orientation == Qt::Horizontal ? Qt::AlignBottom : Qt::AlignLeft;
    QList<QAbstractSeries*> attached;
    for (QAbstractSeries* series : chart_->series()) {
        if (series->attachedAxes().contains(from)) attached.append(series);
    }
    // The idle axis missed any theme change since it left: it takes the outgoing axis's look.
    copy_axis_look(*from, *to);
    chart_->removeAxis(from);
    from->setParent(chart_);  // removeAxis hands ownership back; the chart keeps the idle axis
    chart_->addAxis(to, alignment);
    for (QAbstractSeries* series : attached) series->attachAxis(to);
    {
        const QSignalBlocker quiet(log.toggle);
        log.toggle->setChecked(on);
    }
    scale_changed();
    fit_axes(min_x_span_, min_y_span_);
}

void ChartPanel::fit_axes(double min_x_span, double min_y_span) {
    if (!x_axis_ || !y_axis_) return;
    min_x_span_ = min_x_span;
    min_y_span_ = min_y_span;
    fitted_ = true;
    double min_x = std::numeric_limits<double>::max(), max_x = std::numeric_limits<double>::lowest();
    double max_y = 0;
    double min_positive_x = std::numeric_limits<double>::max(), min_positive_y = std::numeric_limits<double>::max();
    for (QAbstractSeries* series : chart_->series()) {
        const auto* xy = qobject_cast<const QXYSeries*>(series);
        if (xy == nullptr) continue;
        for (const QPointF& p : xy->points()) {
            min_x = std::min(min_x, p.x());
            max_x = std::max(max_x, p.x());
            max_y = std::max(max_y, p.y());
            if (p.x() > 0) min_positive_x = std::min(min_positive_x, p.x());
            if (p.y() > 0) min_positive_y = std::min(min_positive_y, p.y());
        }
    }
    if (min_x > max_x) {
        min_x = 0;
        max_x = min_x_span;
    }
    constexpr double kMargin = 0.02;
    if (log_x_.on) fit_log_axis(log_x_.axis, min_positive_x, max_x);
    else apply_round_ticks(x_axis_, std::min(0.0, min_x), std::max(max_x, min_x + min_x_span), kMargin, x_intervals_);
    if (log_y_.on) return fit_log_axis(log_y_.axis, min_positive_y, max_y);
    double high = std::max(max_y * 1.05, min_y_span);
    if (y_ceiling_ > 0) high = std::min(high, y_ceiling_);
    apply_round_ticks(y_axis_, 0, high, kMargin, y_intervals_);
}

void ChartPanel::copy_axis_look(const QAbstractAxis& from, QAbstractAxis& to) {
    to.setLabelsBrush(from.labelsBrush());
    to.setLabelsFont(from.labelsFont());
    to.setTitleBrush(from.titleBrush());
    to.setTitleFont(from.titleFont());
    to.setLinePen(from.linePen());
    to.setGridLinePen(from.gridLinePen());
    to.setMinorGridLinePen(from.minorGridLinePen());
    to.setShadesBrush(from.shadesBrush());
    to.setShadesPen(from.shadesPen());
}

void ChartPanel::fit_log_axis(QLogValueAxis* axis, double min_positive, double max) {
    const double base = axis->base();
    const auto power = [base](double value) { return std::log(value) / std::log(base); };
    if (!(min_positive <= max) || !(max > 0)) {
        min_positive = 1;
        max = base;
    }
    const double low = std::pow(base, std::floor(power(min_positive) + 1e-9));
    const double high = std::max(low * base, std::pow(base, std::ceil(power(max) - 1e-9)));
    // Powers of the base without trailing zeros (0.01, 0.1, 1, 10, 1000000; %g turns to
    // e-notation only below 10^-4, which no panel plots).
    if (!axis->labelFormat().endsWith(QLatin1Char('d'))) axis->setLabelFormat(QStringLiteral("%.12g"));
    // A twentieth of a power past each end, so that points on a power are drawn whole.
    const double margin = std::pow(base, 0.05);
    axis->setRange(low / margin, high * margin);
}

void replace_bar_values(QBarSet* set, const QList<qreal>& values) {
    if (set->count() > 0) set->remove(0, set->count());
    set->append(values);
}

void apply_round_ticks(QValueAxis* axis, double low, double high, double margin, int target_intervals) {
    const bool integers = axis->labelFormat().endsWith(QLatin1Char('d'));
    const RoundTicks ticks = round_ticks(low, high, target_intervals, integers);
    if (!integers) axis->setLabelFormat(QStringLiteral("%.%1f").arg(ticks.decimals));
    const double pad = margin * (ticks.max - ticks.min);
    // Fixed ticks while the range changes: the old interval over the new range (or the new one
    // over the old) could ask Qt Charts for millions of tick items.
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(ticks.min - pad, ticks.max + pad);
    axis->setTickAnchor(ticks.min);
    axis->setTickInterval(ticks.step);
    axis->setTickType(QValueAxis::TicksDynamic);
}

}  // namespace inferscope::ui
