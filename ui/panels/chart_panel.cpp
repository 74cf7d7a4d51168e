#include "ui/panels/chart_panel.h"

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
    if (x_axis_) data.x_label = x_axis_->titleText();
    if (y_axis_) data.y_label = y_axis_->titleText();
    for (QAbstractSeries* series : chart_->series()) {
        const auto* xy = qobject_cast<const QXYSeries*>(series);
        if (xy == nullptr) continue;
        data.series.push_back({xy->name(), xy->points().toVector()});
    }
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
    x_axis_->setRange(std::min(0.0, min_x), std::max(max_x, min_x + min_x_span));
    y_axis_->setRange(0, std::max(max_y * 1.1, min_y_span));
}

}  // namespace inferscope::ui
