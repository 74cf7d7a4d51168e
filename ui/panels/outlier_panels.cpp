#include "ui/panels/outlier_panels.h"

#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <cmath>

namespace inferscope::ui {
namespace {

void add_series(QChart* chart, std::initializer_list<QXYSeries*> series, QValueAxis* x, QValueAxis* y) {
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : series) {
        chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
}

QValueAxis* axis(const QString& title, bool integers) {
    auto* a = new QValueAxis();
    a->setTitleText(title);
    if (integers) a->setLabelFormat(QStringLiteral("%d"));
    return a;
}

}  // namespace

OutlierHistogramPanel::OutlierHistogramPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("outlier-histogram"), parent), bins_(new QLineSeries()) {
    chart()->setTitle(tr("Per-dimension max |h|: log2 histogram"));
    bins_->setName(tr("dimensions per bin"));
    bins_->setPointsVisible(true);
    auto* x = axis(tr("bin: max |h| < 2^x"), true);
    auto* y = axis(tr("dimensions"), true);
    add_series(chart(), {bins_}, x, y);
    set_axes(x, y);
    fit_axes(8, 1);
}

void OutlierHistogramPanel::set_layer(const LayerOutlierSummary& layer, const QString& tensor) {
    QList<QPointF> points;
    for (const Log2Bin& bin : layer.histogram) points.append(QPointF(std::log2(bin.upper), static_cast<double>(bin.count)));
    bins_->replace(points);
    chart()->setTitle(tr("Layer %1 %2: max |h| per dimension, log2 bins (%3 tokens)")
                          .arg(layer.layer)
                          .arg(tensor)
                          .arg(layer.n_tokens));
    fit_axes(8, 1);
}

OutlierMaximaPanel::OutlierMaximaPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("outlier-dimensions"), parent), maxima_(new QLineSeries()), top_(new QScatterSeries()) {
    chart()->setTitle(tr("Per-dimension max |h|"));
    maxima_->setName(tr("max |h| per dimension"));
    top_->setName(tr("top dimensions"));
    top_->setMarkerSize(10);
    top_->setPointLabelsVisible(true);
    top_->setPointLabelsFormat(QStringLiteral("dim @xPoint"));
    auto* x = axis(tr("residual-stream dimension"), true);
    auto* y = axis(tr("max |h| over the prompt's tokens"), false);
    add_series(chart(), {maxima_, top_}, x, y);
    set_axes(x, y);
    fit_axes(64, 1);
}

void OutlierMaximaPanel::set_layer(const LayerOutlierSummary& layer, const QString& tensor) {
    QList<QPointF> maxima, top;
    for (size_t dim = 0; dim < layer.dim_max_abs.size(); ++dim) {
        maxima.append(QPointF(static_cast<double>(dim), layer.dim_max_abs[dim]));
    }
    for (const DimensionValue& t : layer.top) top.append(QPointF(t.dim, t.value));
    maxima_->replace(maxima);
    top_->replace(top);
    chart()->setTitle(tr("Layer %1 %2: max |h| per dimension (median %3, top %4)")
                          .arg(layer.layer)
                          .arg(tensor)
                          .arg(layer.median_dim_max_abs, 0, 'g', 4)
                          .arg(layer.top.empty() ? 0.0 : static_cast<double>(layer.top.front().value), 0, 'g', 4));
    fit_axes(64, 1);
}

}  // namespace inferscope::ui
