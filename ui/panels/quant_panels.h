#pragma once
// The quantization lab's charts. QuantErrorPanel: the relative error ||W - W_hat||_F / ||W||_F
// of every quantized matrix under one scheme, grouped by layer with one coloured bar per
// matrix kind (attn_q, …, ffn_down), the layers in file order or the worst first, the worst
// matrix highlighted and named, with bits/weight and model size in a line below.
// QuantQualityPanel: one bar per measured scheme, its KL divergence from the unquantized
// model. Both export each bar's other numbers as extra series by category index.
#include <QStringList>
#include <vector>

#include "ui/labs/quant_measurements.h"
#include "ui/panels/chart_panel.h"

class QBarCategoryAxis;
class QBarSeries;
class QBarSet;
class QLabel;
class QValueAxis;

namespace inferscope::ui {

class QuantErrorPanel : public ChartPanel {
    Q_OBJECT
public:
    enum class Order { File, ByError };

    explicit QuantErrorPanel(QWidget* parent = nullptr);

    // The report of one scheme (analyze_quantization with a single scheme).
    void set_report(const QuantReport& report);
    void clear();
    void set_order(Order order);
    Order order() const { return order_; }
    // Index (in file order) of the matrix with the largest relative error; -1 when empty.
    int worst_matrix() const;
    // The worst matrix's position in the exported list (display order); -1 when empty.
    int highlighted_bar() const;
    QString summary_line() const;
    // The exported list's matrix names, in display order (file order, or worst first).
    QStringList categories() const;
    // The chart's groups, left to right: layer numbers and tensors outside the blocks by name,
    // in the order of their first matrix in categories().
    QStringList group_labels() const;
    // The matrix kinds, one bar set each, in the order of their first appearance.
    QStringList kinds() const { return kinds_; }
    // Exports one row per matrix, not per drawn bar: series "relative error", "rows", "cols" and
    // "bits/weight" with points (position in display order, value), categories the matrix names.
    PlotData plot_data() const override;

protected:
    void style_series(bool dark) override;

private:
    struct Bar {
        QString name;
        QString group;  // "3" for blk.3.*, else the tensor's name
        QString kind;   // "attn_q" for blk.3.attn_q.weight, else the tensor's name
        qint64 rows = 0;
        qint64 cols = 0;
        double relative_error = 0;
        double bits_per_weight = 0;
    };
    // The layer ("3" for blk.3.*) and kind ("attn_q") a tensor name gives.
    static Bar parse_matrix_name(const QString& name);
    void redraw();
    // Draws the bars grouped by layer; returns the largest error.
    double draw_groups();
    void show_tooltip(bool on, int group, QBarSet* set);

    QBarSeries* series_;
    QBarCategoryAxis* groups_axis_;
    QValueAxis* error_axis_;
    QLabel* summary_;
    std::vector<Bar> bars_;     // file order
    std::vector<int> display_;  // indices into bars_, as exported
    QStringList groups_;        // as drawn
    QStringList kinds_;
    Order order_ = Order::File;
};

class QuantQualityPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit QuantQualityPanel(QWidget* parent = nullptr);

    void set_rows(const std::vector<QualityRow>& rows);

protected:
    // "bits/weight", "size MiB", "PPL", "dPPL", "top-1 agreement" per measured scheme, and the
    // battery's passed items (quantized, unquantized) for rows that ran it.
    void append_exported_series(PlotData& data) const override;

private:
    QBarSet* kl_;
    QBarCategoryAxis* schemes_;
    QValueAxis* kl_axis_;
    std::vector<QualityRow> rows_;
};

// Bytes in MiB (2^20 bytes), as the lab labels sizes.
double bytes_to_mib(uint64_t bytes);

}  // namespace inferscope::ui
