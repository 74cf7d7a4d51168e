#pragma once
// The activation-outlier charts of one layer: the log2 histogram of the per-dimension
// maxima max|h| (most dimensions sit in a few bins, the outliers alone far to the right),
// and the maxima over the dimensions with the top ones labelled.
#include "engine/probes/outlier_stats.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;
class QScatterSeries;

namespace inferscope::ui {

class OutlierHistogramPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit OutlierHistogramPanel(QWidget* parent = nullptr);

    // One point per bin: (log2 of the bin's upper bound, dimensions in the bin); the first
    // bin is [0, 1), bin i >= 1 is [2^(i-1), 2^i).
    void set_layer(const LayerOutlierSummary& layer, const QString& tensor);

private:
    QLineSeries* bins_;
};

class OutlierMaximaPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit OutlierMaximaPanel(QWidget* parent = nullptr);

    void set_layer(const LayerOutlierSummary& layer, const QString& tensor);

private:
    QLineSeries* maxima_;
    QScatterSeries* top_;
};

}  // namespace inferscope::ui
