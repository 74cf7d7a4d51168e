#include "ui/panels/chart_panel.h"

#include "ui/panels/round_ticks.h"

#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QValueAxis>
#include <QVBoxLayout>
#include <QXYSeries>
#include <algorithm>
#include <limits>

namespace inferscope::ui {

ChartPanel::ChartPanel(const QString& export_name, QWidget* parent)
    : QWidget(parent), export_name_(export_name), chart_(new QChart()), view_(new QChartView(chart_, this)) {
    view_->setRenderHint(QPainter::Antialiasing);
    chart_->legend()->setAlignment(Qt::AlignBottom);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(view_);
}

PlotData ChartPanel::plot_data() const {
    PlotData data;
    data.title = chart_->title();
    // Panels whose axes are not value axes (a bar chart's categories) name them on the chart.
    const QList<QAbstractAxis*> x_axes = chart_->axes(Qt::Horizontal), y_axes = chart_->axes(Qt::Vertical);
    if (x_axis_) data.x_label = x_axis_->titleText();
    else if (!x_axes.isEmpty()) data.x_label = x_axes.front()->titleText();
    if (y_axis_) data.y_label = y_axis_->titleText();
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
    chart_->setTheme(dark ? QChart::ChartThemeDark : QChart::ChartThemeLight);
    style_series(dark);
}

void ChartPanel::fit_axes(double min_x_span, double min_y_span) {
    if (!x_axis_ || !y_axis_) return;
    double min_x = std::numeric_limits<double>::max(), max_x = std::numeric_limits<double>::lowest();
    double max_y = 0;
    for (QAbstractSeries* series : chart_->series()) {
        const auto* xy = qobject_cast<const QXYSeries*>(series);
        if (xy == nullptr) continue;
        for (const QPointF& p : xy->points()) {
            min_x = std::min(min_x, p.x());
            max_x = std::max(max_x, p.x());
            max_y = std::max(max_y, p.y());
        }
    }
    if (min_x > max_x) {
        min_x = 0;
        max_x = min_x_span;
    }
    apply_round_ticks(x_axis_, std::min(0.0, min_x), std::max(max_x, min_x + min_x_span));
    apply_round_ticks(y_axis_, 0, std::max(max_y * 1.05, min_y_span));
}

void apply_round_ticks(QValueAxis* axis, double low, double high) {
    const bool integers = axis->labelFormat().endsWith(QLatin1Char('d'));
    const RoundTicks ticks = round_ticks(low, high, 5, integers);
    // Fixed ticks while the range changes: the old interval over the new range (or the new one
    // over the old) could ask Qt Charts for millions of tick items.
    axis->setTickType(QValueAxis::TicksFixed);
    axis->setRange(ticks.min, ticks.max);
    axis->setTickAnchor(ticks.min);
    axis->setTickInterval(ticks.step);
    axis->setTickType(QValueAxis::TicksDynamic);
}

}  // namespace inferscope::ui
