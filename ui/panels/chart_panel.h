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

class QAbstractAxis;
class QBarSet;
class QCheckBox;
class QHBoxLayout;
class QLogValueAxis;
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
    // The chart view with its scale check boxes: what a panel lays out where it wants the chart.
    QWidget* chart_area() const { return chart_area_; }
    // Switches between the light and dark chart themes (following the window palette).
    void set_dark_theme(bool dark);
    bool dark_theme() const { return dark_; }
    // Whether the axis of `orientation` is drawn on a log scale; only axes a panel offers one
    // for (offer_log_scale) can be switched.
    bool log_scale(Qt::Orientation orientation) const;
    void set_log_scale(Qt::Orientation orientation, bool on);
    // The axis the series of `orientation` are attached to now (linear or log).
    QAbstractAxis* current_axis(Qt::Orientation orientation) const;

protected:
    // Re-applies a subclass's own series styling, which a theme change resets.
    virtual void style_series(bool /*dark*/) {}
    // Adds what a panel exports beyond the drawn series (e.g. each bar's shape), by category index.
    virtual void append_exported_series(PlotData& /*data*/) const {}
    // Called after an axis switched between linear and log, for panels whose series hold values
    // a log axis cannot show (zero) and must re-plot without them.
    virtual void scale_changed() {}
    // Rescales the axes to the data (with a margin) at round limits and ticks, after points
    // were added; a log axis spans the powers of its base around the positive values.
    void fit_axes(double min_x_span = 1.0, double min_y_span = 1.0);
    // Used by subclasses to register their axes.
    void set_axes(QValueAxis* x, QValueAxis* y) {
        x_axis_ = x;
        y_axis_ = y;
    }
    // The y axis stops at `ceiling` however high the data's margin would take it (a percentage's 100).
    void set_y_ceiling(double ceiling) { y_ceiling_ = ceiling; }
    // Adds a "log scale" check box for the axis of `orientation` (registered with set_axes),
    // whose powers of `base` become the ticks.
    void offer_log_scale(Qt::Orientation orientation, double base = 10);

private:
    struct LogAxis {
        QLogValueAxis* axis = nullptr;
        QCheckBox* toggle = nullptr;
        bool on = false;
    };
    LogAxis& log_axis(Qt::Orientation orientation) { return orientation == Qt::Horizontal ? log_x_ : log_y_; }
    const LogAxis& log_axis(Qt::Orientation orientation) const { return orientation == Qt::Horizontal ? log_x_ : log_y_; }
    QValueAxis* linear_axis(Qt::Orientation orientation) const { return orientation == Qt::Horizontal ? x_axis_ : y_axis_; }
    void fit_log_axis(QLogValueAxis* axis, double min_positive, double max);
    // Tick counts that leave each label room at the chart's current size; refits when they change.
    void follow_chart_size();
    static void copy_axis_look(const QAbstractAxis& from, QAbstractAxis& to);

    QString export_name_;
    QChart* chart_;
    QWidget* chart_area_;
    QChartView* view_;
    QHBoxLayout* scale_row_ = nullptr;  // the log-scale check boxes, above the chart
    QValueAxis* x_axis_ = nullptr;
    QValueAxis* y_axis_ = nullptr;
    LogAxis log_x_, log_y_;
    double y_ceiling_ = 0;  // 0: none
    double min_x_span_ = 1, min_y_span_ = 1;  // of the last fit_axes, for refits after a scale change
    bool fitted_ = false;                     // fit_axes has run: refits may follow
    int x_intervals_ = 5, y_intervals_ = 5;   // tick intervals the chart's size has room for
    bool dark_ = false;
};

// Replaces every value of a bar set (Qt has no call for it).
void replace_bar_values(QBarSet* set, const QList<qreal>& values);

// Sets `axis` to the round range and tick step (ui/panels/round_ticks.h) covering [low, high],
// with labels written to the step's precision; an axis labelled with "%d" gets whole-number
// steps. `margin` widens the drawn range by that fraction of the span on both sides, without
// ticks there, so that points on the limits are drawn whole.
void apply_round_ticks(QValueAxis* axis, double low, double high, double margin = 0, int target_intervals = 5);

}  // namespace inferscope::ui
