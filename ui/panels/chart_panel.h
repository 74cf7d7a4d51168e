#pragma once
// Base of every chart panel: one QChart in a QChartView, and the exact data it plots in a
// form the exporters write out (PNG, SVG, CSV, JSON).
#include <QChart>
#include <QChartView>
#include <QPointF>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

class QValueAxis;

namespace inferscope::ui {

struct PlotSeries {
    QString name;
    QVector<QPointF> points;
};

struct PlotData {
    QString title;
    QString x_label;
    QString y_label;
    QVector<PlotSeries> series;
    // A bar chart's category labels: x = i stands for categories[i] (empty for value axes).
    QStringList categories;
};

class ChartPanel : public QWidget {
    Q_OBJECT
public:
    // `export_name` is the file stem used by "Export all" (e.g. "step-latency").
    ChartPanel(const QString& export_name, QWidget* parent = nullptr);

    const QString& export_name() const { return export_name_; }
    // The data as plotted: every series of the chart with its points. A panel whose series
    // encode a value in colour (a heat map) exports the values instead.
    virtual PlotData plot_data() const;
    QChart* chart() const { return chart_; }
    QChartView* chart_view() const { return view_; }
    // Switches between the light and dark chart themes (following the window palette).
    void set_dark_theme(bool dark);

protected:
    // Re-applies a subclass's own series styling, which a theme change resets.
    virtual void style_series(bool /*dark*/) {}
    // Adds what a panel exports beyond the drawn series (e.g. each bar's shape), by category index.
    virtual void append_exported_series(PlotData& /*data*/) const {}
    // Rescales the axes to the data (with a margin) at round limits and ticks, after points
    // were added.
    void fit_axes(double min_x_span = 1.0, double min_y_span = 1.0);
    // Used by subclasses to register their axes.
    void set_axes(QValueAxis* x, QValueAxis* y) {
        x_axis_ = x;
        y_axis_ = y;
    }

private:
    QString export_name_;
    QChart* chart_;
    QChartView* view_;
    QValueAxis* x_axis_ = nullptr;
    QValueAxis* y_axis_ = nullptr;
};

// Sets `axis` to the round range and tick step (ui/panels/round_ticks.h) covering [low, high];
// an axis labelled with "%d" gets whole-number steps.
void apply_round_ticks(QValueAxis* axis, double low, double high);

}  // namespace inferscope::ui
