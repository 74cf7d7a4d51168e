#include "ui/panels/outlier_panels.h"
#include "ui/number_format.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QLinearGradient>
#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>

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

// A power of two as a reader takes it in: 0.5, 1, 64, 1024, and 2^20 beyond five digits.
QString power_of_two_label(double value) {
    if (value >= 1e5) return QStringLiteral("2^%1").arg(std::lround(std::log2(value)));
    return format_number(value, 6);
}

}  // namespace

QString OutlierHistogramPanel::bin_label(const Log2Bin& bin) {
    // Not "< 1": axis labels are rich text, where "<" opens a tag.
    if (bin.lower <= 0) return tr("0\u2013%1").arg(power_of_two_label(bin.upper));
    return tr("%1–%2").arg(power_of_two_label(bin.lower), power_of_two_label(bin.upper));
}

OutlierHistogramPanel::OutlierHistogramPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("outlier-histogram"), parent),
      counts_(new QBarSet(tr("dimensions per bin"))),
      bins_axis_(new QBarCategoryAxis()),
      count_axis_(axis(tr("dimensions"), true)) {
    chart()->setTitle(tr("Per-dimension max |h|: log2 histogram"));
    auto* series = new QBarSeries();
    series->append(counts_);
    series->setBarWidth(0.9);
    bins_axis_->setTitleText(tr("max |h| of the dimension (bins of one octave)"));
    chart()->addSeries(series);
    chart()->addAxis(bins_axis_, Qt::AlignBottom);
    chart()->addAxis(count_axis_, Qt::AlignLeft);
    series->attachAxis(bins_axis_);
    series->attachAxis(count_axis_);
    chart()->legend()->hide();
    apply_round_ticks(count_axis_, 0, 1);
}

void OutlierHistogramPanel::set_layer(const LayerOutlierSummary& layer, const QString& tensor) {
    QStringList labels;
    QList<qreal> counts;
    double max_count = 0;
    for (const Log2Bin& bin : layer.histogram) {
        labels << bin_label(bin);
        counts << static_cast<qreal>(bin.count);
        max_count = std::max(max_count, static_cast<double>(bin.count));
    }
    replace_bar_values(counts_, counts);
    bins_axis_->setCategories(labels);
    // Many octaves (a model with huge outliers) would overlap horizontal labels.
    bins_axis_->setLabelsAngle(labels.size() > 8 ? -60 : 0);
    apply_round_ticks(count_axis_, 0, std::max(1.0, max_count * 1.05));
    chart()->setTitle(tr("Layer %1 %2: dimensions per octave of max |h| (%3 tokens)")
                          .arg(layer.layer)
                          .arg(tensor)
                          .arg(layer.n_tokens));
}

void OutlierHistogramPanel::clear(const QString& title) {
    replace_bar_values(counts_, {});
    bins_axis_->clear();
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
      rows_header_(new QGraphicsSimpleTextItem(tr("dim"), chart())),
      colour_bar_(new QGraphicsRectItem(chart())),
      colour_bar_high_(new QGraphicsSimpleTextItem(chart())),
      colour_bar_low_(new QGraphicsSimpleTextItem(chart())) {
    colour_bar_->setPen(Qt::NoPen);
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
    margins.setRight(margins.right() + kColourBarGutterPx);
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
    chart()->setTitle(log2_max_abs_.isEmpty() ? tr("Top dimensions across layers: log2 max |h|")
                                              : tr("Top %1 %2 dimensions: max |h| per layer").arg(dimensions_.size()).arg(tensor));
    label_colour_bar();
    fit_cells();
}

void OutlierHeatStripPanel::label_colour_bar() {
    double smallest = std::numeric_limits<double>::max(), largest = 0;
    for (const std::vector<float>& row : max_abs_) {
        for (const float value : row) {
            smallest = std::min(smallest, std::max(static_cast<double>(value), std::exp2(kLog2Floor)));
            largest = std::max(largest, static_cast<double>(value));
        }
    }
    colour_bar_high_->setText(max_abs_.empty() ? QString() : format_number(largest, 3));
    colour_bar_low_->setText(max_abs_.empty() ? QString() : format_number(smallest, 3));
}

void OutlierHeatStripPanel::style_series(bool) {
    cells_->setPen(Qt::NoPen);
    QFont small = layers_axis_->labelsFont();
    small.setPixelSize(10);
    for (QGraphicsSimpleTextItem* text : {rows_header_, colour_bar_high_, colour_bar_low_}) {
        text->setFont(small);
        text->setBrush(layers_axis_->labelsBrush());
    }
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
    const bool has_cells = n_layers_ > 0 && !dimensions_.empty();
    place_colour_bar(area, has_cells);
    if (!has_cells) return;
    const double row_height = area.height() / static_cast<double>(dimensions_.size());
    for (int row = 0; row < row_labels_.size(); ++row) right_aligned(row_labels_[row], area.top() + (row + 0.5) * row_height);
    // Markers are squares in pixels: as large as the narrower side of a cell.
    cells_->setMarkerSize(std::max(1.0, std::min(area.width() / n_layers_, row_height)));
}

void OutlierHeatStripPanel::place_colour_bar(const QRectF& area, bool visible) {
    for (QGraphicsItem* item : std::initializer_list<QGraphicsItem*>{colour_bar_, colour_bar_high_, colour_bar_low_}) {
        item->setVisible(visible);
    }
    if (!visible) return;
    // Beside the largest values' end of the scale the bar reads the same way as the cells: the
    // gradient runs through heat_colour's hues, its ends labelled with the max |h| they stand for.
    const QRectF bar(area.right() + kColourBarGapPx, area.top(), kColourBarWidthPx, area.height());
    QLinearGradient gradient(bar.topLeft(), bar.bottomLeft());
    constexpr int kStops = 8;
    for (int i = 0; i <= kStops; ++i) {
        const double t = static_cast<double>(i) / kStops;
        gradient.setColorAt(t, heat_colour(1.0 - t, 0.0, 1.0));
    }
    colour_bar_->setRect(bar);
    colour_bar_->setBrush(gradient);
    const double text_x = bar.right() + kRowLabelGapPx;
    colour_bar_high_->setPos(text_x, bar.top());
    colour_bar_low_->setPos(text_x, bar.bottom() - colour_bar_low_->boundingRect().height());
}

QStringList OutlierHeatStripPanel::colour_bar_labels() const {
    if (log2_max_abs_.isEmpty()) return {};
    return {colour_bar_high_->text(), colour_bar_low_->text()};
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
