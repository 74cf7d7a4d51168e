#pragma once
// The memory planner: weights + runtime reserve + KV cache <= device memory, from
// engine/plan/memory_budget.h. For a device size, a model (the presets or the
// loaded one), a weight precision, a KV-cache type and a number of users it charts the
// tokens of context each user gets against device memory, and tables every model and
// precision at the chosen size: "does it fit?" is the wrong question, "with how much
// context, for how many users?" the right one.
#include <vector>

#include "engine/plan/memory_budget.h"
#include "ui/engine_types.h"
#include "ui/panels/chart_panel.h"

class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineSeries;
class QPushButton;
class QScatterSeries;
class QSpinBox;
class QTableWidget;

namespace inferscope::ui {

class MemoryPlannerPanel : public ChartPanel {
    Q_OBJECT
public:
    // The chart spans 1 GiB ... this (or the chosen size, when larger) in steps of 1 GiB.
    static constexpr int kChartMaxGiB = 80;

    explicit MemoryPlannerPanel(QWidget* parent = nullptr);

    // Adds (or replaces) the loaded model as a choice; a model without an attention shape
    // (layers, KV heads, head dim) or parameters is not offered.
    void set_model(const ModelSummary& model);
    // Offers a detected GPU's memory budget as a device size (once per device name).
    void add_detected_memory(const QString& device, double budget_gib);
    // Sets the controls to the worked example: 13B, int4 weights, f16 KV, 8 GiB, 1 user.
    void show_worked_example();

    // The model and query the controls describe.
    BudgetModel chosen_model() const;
    BudgetQuery query() const;
    // The weight formats charted, one series each, in this order.
    static const std::vector<std::string>& weight_formats();

    QComboBox* memory_combo() const { return memory_; }
    QDoubleSpinBox* custom_memory() const { return custom_gib_; }
    QComboBox* model_combo() const { return model_; }
    QComboBox* weights_combo() const { return weights_; }
    QComboBox* kv_dtype_combo() const { return kv_dtype_; }
    QSpinBox* users_spin() const { return users_; }
    QDoubleSpinBox* reserve_spin() const { return reserve_gib_; }
    QTableWidget* table() const { return table_; }
    QLabel* lesson() const { return lesson_; }
    QLabel* status() const { return status_; }

private:
    QWidget* build_controls();
    QWidget* build_device_controls();
    void connect_controls();
    void style_series(bool dark) override;
    void scale_changed() override { recompute(); }
    void recompute();
    void update_chart(const BudgetModel& model, const BudgetQuery& query);
    void update_table(const BudgetQuery& query);
    void show_lesson();

    QComboBox* memory_;
    QDoubleSpinBox* custom_gib_;
    QComboBox* model_;
    QComboBox* weights_;
    QComboBox* kv_dtype_;
    QSpinBox* users_;
    QDoubleSpinBox* reserve_gib_;
    QPushButton* example_;
    QTableWidget* table_;
    QLabel* lesson_;
    QLabel* status_;
    std::vector<QLineSeries*> per_format_;  // one per weight_formats()
    QScatterSeries* chosen_;
    std::vector<BudgetModel> models_;  // the model combo's entries, in its order
};

}  // namespace inferscope::ui
