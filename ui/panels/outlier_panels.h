#pragma once
// The activation-outlier charts of one layer: the log2 histogram of the per-dimension
// maxima max|h| (most dimensions sit in a few bins, the outliers alone far to the right),
// and the maxima over the dimensions with the top ones labelled; and across layers, a heat
// strip of the dimensions with the largest maxima (do the same few stay large in every
// block?).
#include <span>
#include <vector>

#include "engine/probes/outlier_stats.h"
#include "ui/panels/chart_panel.h"

class QBarCategoryAxis;
class QBarSet;
class QGraphicsRectItem;
class QGraphicsSimpleTextItem;
class QLineSeries;
class QScatterSeries;
class QValueAxis;

namespace inferscope::ui {

class OutlierHistogramPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit OutlierHistogramPanel(QWidget* parent = nullptr);

    // One bar per bin, labelled by its bounds: (bin index, dimensions in the bin) in
    // plot_data(); the first bin is [0, 1), bin i >= 1 is [2^(i-1), 2^i).
    void set_layer(const LayerOutlierSummary& layer, const QString& tensor);
    // No data; the title says why.
    void clear(const QString& title);
    // "0–1", "1–2", "2–4", …, "2^20–2^21".
    static QString bin_label(const Log2Bin& bin);

private:
    QBarSet* counts_;
    QBarCategoryAxis* bins_axis_;
    QValueAxis* count_axis_;
};

class OutlierMaximaPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit OutlierMaximaPanel(QWidget* parent = nullptr);

    void set_layer(const LayerOutlierSummary& layer, const QString& tensor);
    // No data; the title says why.
    void clear(const QString& title);

private:
    QLineSeries* maxima_;
    QScatterSeries* top_;
};

// Rows: the kDimensions dimensions with the largest max |h| over every layer (largest at the
// top); columns: the layers; colour: log2 max|h| of that dimension in that layer. Drawn as
// square markers, one per cell, coloured from blue (smallest) to red (largest), with a colour
// bar that names the max |h| at both ends.
class OutlierHeatStripPanel : public ChartPanel {
    Q_OBJECT
public:
    static constexpr int kDimensions = 16;

    explicit OutlierHeatStripPanel(QWidget* parent = nullptr);

    // `layers` in block order, all of one width.
    void set_layers(std::span<const LayerOutlierSummary> layers, const QString& tensor);
    // No rows; the title says why.
    void clear(const QString& title);
    // The rows, top first, with each dimension's largest max |h| over the layers.
    const std::vector<DimensionValue>& dimensions() const { return dimensions_; }
    // The matrix, not the markers' grid positions: one series per row, named "dim D", with
    // points (layer, max |h| of D in that layer).
    PlotData plot_data() const override;
    // The colour bar's end labels, largest max |h| first; empty while there are no cells.
    QStringList colour_bar_labels() const;

protected:
    void style_series(bool dark) override;

private:
    void fit_cells();
    // The colour scale right of the plot, its ends labelled with max |h| (not its log2).
    void place_colour_bar(const QRectF& area, bool visible);
    void label_colour_bar();

    static constexpr int kRowLabelGutterPx = 28;  // room left of the plot for the row names
    static constexpr int kRowLabelGapPx = 4;
    static constexpr int kColourBarGapPx = 10;
    static constexpr int kColourBarWidthPx = 12;
    static constexpr int kColourBarGutterPx = 56;  // room right of the plot for the bar and its labels

    QScatterSeries* cells_;  // point (layer, row)
    QValueAxis* layers_axis_;
    QValueAxis* rows_axis_;  // rows, 0 on top; named by row_labels_
    QGraphicsSimpleTextItem* rows_header_;
    QGraphicsRectItem* colour_bar_;
    QGraphicsSimpleTextItem* colour_bar_high_;  // max |h| at the red end
    QGraphicsSimpleTextItem* colour_bar_low_;   // and at the blue end
    QList<QGraphicsSimpleTextItem*> row_labels_;  // the dimension of each row, owned by the chart
    std::vector<DimensionValue> dimensions_;
    std::vector<std::vector<float>> max_abs_;  // [row][layer]
    QList<qreal> log2_max_abs_;                // per cell, in cells_' point order
    int n_layers_ = 0;
};

}  // namespace inferscope::ui
