#pragma once
// KV-cache memory growth: bytes in use and bytes reserved (whole blocks) against tokens in
// the cache, live, with the formula 2 x layers x kv_heads x head_dim x bytes per element
// and what full multi-head (MHA) or multi-query (MQA) attention would cost for the same
// model.
#include "ui/engine_types.h"
#include "ui/panels/chart_panel.h"

class QLineSeries;

namespace inferscope::ui {

class KvMemoryPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit KvMemoryPanel(QWidget* parent = nullptr);

    void set_model(const ModelSummary& model);
    void reset();
    // Adds the cache state after each step of the KV-cached run (no-cache steps are ignored).
    void add_steps(const QVector<StepRecord>& steps);

    QPointF last_in_use_point() const;

private:
    void style_series(bool dark) override;
    void extend_reference_lines(int tokens);

    QLineSeries* in_use_;
    QLineSeries* reserved_;
    QLineSeries* formula_;
    QLineSeries* mha_;
    QLineSeries* mqa_;
    ModelSummary model_;
    int max_tokens_ = 0;
};

}  // namespace inferscope::ui
