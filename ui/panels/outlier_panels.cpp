#include "ui/panels/outlier_panels.h"
#include "ui/number_format.h"

#include <QGraphicsSimpleTextItem>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
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

// Maxima at or below 2^-24 (an all-zero dimension) share the scale's floor instead of -inf.
constexpr double kLog2Floor = -24.0;

double log2_of_max_abs(float value) { return std::max(kLog2Floor, std::log2(static_cast<double>(value))); }

// Blue (the smallest value shown) through green and yellow to red (the largest).
QColor heat_colour(double value, double low, double high) {
    const double t = high > low ? std::clamp((value - low) / (high - low), 0.0, 1.0) : 1.0;
    return QColor::fromHsvF(static_cast<float>((1.0 - t) * 240.0 / 360.0), 0.85f, 0.95f);
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

void OutlierHistogramPanel::clear(const QString& title) {
    bins_->clear();
    chart()->setTitle(title);
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
                          .arg(format_number(layer.median_dim_max_abs, 4))
                          .arg(format_number(layer.top.empty() ? 0.0 : static_cast<double>(layer.top.front().value), 4)));
    fit_axes(64, 1);
}

OutlierHeatStripPanel::OutlierHeatStripPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("outlier-heat-strip"), parent),
      cells_(new QScatterSeries()),
      layers_axis_(axis(tr("layer (block)"), true)),
      rows_axis_(new QValueAxis()),
      rows_header_(new QGraphicsSimpleTextItem(tr("dim"), chart())) {
    chart()->setTitle(tr("Top dimensions across layers: log2 max |h|"));
    cells_->setName(tr("log2 max |h|"));
    cells_->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    layers_axis_->setTickType(QValueAxis::TicksDynamic);
    layers_axis_->setTickAnchor(0);
    layers_axis_->setTickInterval(1);
    layers_axis_->setRange(-0.5, 0.5);
    // The rows are named by text items beside the plot: a category axis elides its labels to
    // "..." once a row is under about 18 px high, which 16 rows in a tab's chart are.
    rows_axis_->setLabelsVisible(false);
    rows_axis_->setTitleVisible(false);
    rows_axis_->setGridLineVisible(false);
    rows_axis_->setReverse(true);  // row 0, the largest, on top
    rows_axis_->setRange(-0.5, 0.5);
    add_series(chart(), {cells_}, layers_axis_, rows_axis_);
    set_axes(layers_axis_, rows_axis_);
    QMargins margins = chart()->margins();
    margins.setLeft(margins.left() + kRowLabelGutterPx);
    chart()->setMargins(margins);
    chart()->legend()->hide();
    style_series(false);
    connect(chart(), &QChart::plotAreaChanged, this, &OutlierHeatStripPanel::fit_cells);
}

void OutlierMaximaPanel::clear(const QString& title) {
    maxima_->clear();
    top_->clear();
    chart()->setTitle(title);
}

void OutlierHeatStripPanel::clear(const QString& title) {
    set_layers({}, QString());
    chart()->setTitle(title);
}

void OutlierHeatStripPanel::set_layers(std::span<const LayerOutlierSummary> layers, const QString& tensor) {
    dimensions_ = top_dimensions_across_layers(layers, kDimensions);
    n_layers_ = static_cast<int>(layers.size());
    max_abs_.assign(dimensions_.size(), std::vector<float>(layers.size()));
    QList<QPointF> points;
    log2_max_abs_.clear();
    qDeleteAll(row_labels_);
    row_labels_.clear();
    for (size_t row = 0; row < dimensions_.size(); ++row) {
        row_labels_.append(new QGraphicsSimpleTextItem(QString::number(dimensions_[row].dim), chart()));
        for (size_t layer = 0; layer < layers.size(); ++layer) {
            const float value = layers[layer].dim_max_abs[static_cast<size_t>(dimensions_[row].dim)];
            max_abs_[row][layer] = value;
            points.append(QPointF(static_cast<double>(layer), static_cast<double>(row)));
            log2_max_abs_.append(log2_of_max_abs(value));
        }
    }
    cells_->replace(points);
    layers_axis_->setRange(-0.5, std::max(0, n_layers_ - 1) + 0.5);
    rows_axis_->setRange(-0.5, std::max<double>(0, static_cast<double>(dimensions_.size()) - 1) + 0.5);
    style_series(chart()->theme() == QChart::ChartThemeDark);
    const auto [low, high] = std::minmax_element(log2_max_abs_.begin(), log2_max_abs_.end());
    chart()->setTitle(log2_max_abs_.isEmpty()
                          ? tr("Top dimensions across layers: log2 max |h|")
                          : tr("Top %1 %2 dimensions: log2 max |h| %3 (blue) to %4 (red)")
                                .arg(dimensions_.size())
                                .arg(tensor)
                                .arg(*low, 0, 'f', 1)
                                .arg(*high, 0, 'f', 1));
    fit_cells();
}

void OutlierHeatStripPanel::style_series(bool) {
    cells_->setPen(Qt::NoPen);
    QFont small = layers_axis_->labelsFont();
    small.setPixelSize(10);
    rows_header_->setFont(small);
    rows_header_->setBrush(layers_axis_->labelsBrush());
    for (QGraphicsSimpleTextItem* label : row_labels_) {
        label->setFont(small);
        label->setBrush(layers_axis_->labelsBrush());
    }
    if (log2_max_abs_.isEmpty()) return;
    const auto [low, high] = std::minmax_element(log2_max_abs_.begin(), log2_max_abs_.end());
    QHash<int, QHash<QXYSeries::PointConfiguration, QVariant>> colours;
    for (int i = 0; i < log2_max_abs_.size(); ++i) {
        colours.insert(i, {{QXYSeries::PointConfiguration::Color, heat_colour(log2_max_abs_[i], *low, *high)}});
    }
    cells_->setPointsConfiguration(colours);
}

void OutlierHeatStripPanel::fit_cells() {
    const QRectF area = chart()->plotArea();
    if (area.isEmpty()) return;
    const auto right_aligned = [&](QGraphicsSimpleTextItem* item, double centre_y) {
        const QRectF box = item->boundingRect();
        item->setPos(area.left() - kRowLabelGapPx - box.width(), centre_y - box.height() / 2);
    };
    right_aligned(rows_header_, area.bottom() + rows_header_->boundingRect().height() / 2 + 4);  // beside the layer numbers
    if (n_layers_ <= 0 || dimensions_.empty()) return;
    const double row_height = area.height() / static_cast<double>(dimensions_.size());
    for (int row = 0; row < row_labels_.size(); ++row) right_aligned(row_labels_[row], area.top() + (row + 0.5) * row_height);
    // Markers are squares in pixels: as large as the narrower side of a cell.
    cells_->setMarkerSize(std::max(1.0, std::min(area.width() / n_layers_, row_height)));
}

PlotData OutlierHeatStripPanel::plot_data() const {
    PlotData data;
    data.title = chart()->title();
    data.x_label = tr("layer (block)");
    data.y_label = tr("max |h| over the prompt's tokens");
    for (size_t row = 0; row < dimensions_.size(); ++row) {
        PlotSeries series{tr("dim %1").arg(dimensions_[row].dim), {}};
        for (size_t layer = 0; layer < max_abs_[row].size(); ++layer) {
            series.points.push_back(QPointF(static_cast<double>(layer), static_cast<double>(max_abs_[row][layer])));
        }
        data.series.push_back(series);
    }
    return data;
}

}  // namespace inferscope::ui
