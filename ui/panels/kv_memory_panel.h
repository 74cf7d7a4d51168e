#pragma once
// KV-cache memory growth: bytes in use and bytes reserved (whole blocks) against tokens in
// the cache, live, with the formula 2 x layers x kv_heads x head_dim x bytes per element
// and what full multi-head (MHA) or multi-query (MQA) attention would cost for the same
// model. For models with sliding-window layers (Gemma 3) it also draws what the global
// layers need (growing with the context) and what the local ones need (flat past the window).
#include <QHash>
#include <QList>
#include <QPointF>

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

    // (tokens, bytes) of the last step; the chart draws it in the axis's unit.
    QPointF last_in_use_point() const;
    // The local layers' line at `tokens` (0 for models without them).
    double local_layers_bytes_at(int tokens) const;

private:
    void style_series(bool dark) override;
    void extend_reference_lines(int tokens);
    // Draws every line from bytes_ in the binary unit (KiB, MiB, …) its largest visible value needs.
    void redraw();

    QLineSeries* in_use_;
    QLineSeries* reserved_;
    QLineSeries* formula_;
    QLineSeries* mha_;
    QLineSeries* mqa_;
    QLineSeries* global_layers_;  // sliding-window models: the global layers' bytes
    QLineSeries* local_layers_;   // and the local layers', which stop growing at the window
    QHash<QLineSeries*, QList<QPointF>> bytes_;  // each line's points as (tokens, bytes)
    ModelSummary model_;
    int max_tokens_ = 0;
};

}  // namespace inferscope::ui
