#pragma once
// The quantization lab's charts. QuantErrorPanel: one bar per quantized matrix, its relative
// error ||W - W_hat||_F / ||W||_F under one scheme, in file order or sorted by error, the
// worst highlighted and named, with bits/weight and model size in a line below.
// QuantQualityPanel: one bar per measured scheme, its KL divergence from the unquantized
// model. Both export each bar's other numbers as extra series by category index.
#include <QStringList>
#include <vector>

#include "ui/labs/quant_measurements.h"
#include "ui/panels/chart_panel.h"

class QBarCategoryAxis;
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
    // The bar drawn highlighted, in display order; -1 when empty.
    int highlighted_bar() const;
    QString summary_line() const;
    QStringList categories() const;

protected:
    void style_series(bool dark) override;
    // "rows", "cols", "bits/weight" per bar, in display order.
    void append_exported_series(PlotData& data) const override;

private:
    struct Bar {
        QString name;
        qint64 rows = 0;
        qint64 cols = 0;
        double relative_error = 0;
        double bits_per_weight = 0;
    };
    void redraw();

    QBarSet* errors_;
    QBarCategoryAxis* matrices_;
    QValueAxis* error_axis_;
    QLabel* summary_;
    std::vector<Bar> bars_;     // file order
    std::vector<int> display_;  // indices into bars_, as drawn
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
