#pragma once
// Per-step latency: every forward step of a generation as a point (step index, wall ms),
// prefill and decode in separate series, and the same for the no-cache comparison run. The
// remote kind plots a server's streamed completion the same way: its first token's time from
// the request, then the time between tokens as they arrived.
#include "ui/engine_types.h"
#include "ui/panels/chart_panel.h"

class QScatterSeries;
class QLineSeries;

namespace inferscope::ui {

class LatencyPanel : public ChartPanel {
    Q_OBJECT
public:
    enum class Source { Local, Remote };
    explicit LatencyPanel(Source source = Source::Local, QWidget* parent = nullptr);

    // Starts a new generation's plot.
    void reset();
    void add_steps(const QVector<StepRecord>& steps);
    // Annotates time to first token and tokens/s (of the KV-cache run) in the title.
    void set_report(const GenerationReport& report);

    int prefill_point_count() const;
    int decode_point_count() const;

private:
    void update_title();

    Source source_;
    QScatterSeries* prefill_;
    QLineSeries* decode_;
    QScatterSeries* recompute_prefill_;
    QLineSeries* recompute_decode_;
    int steps_ = 0;            // steps of the cached run so far
    int recompute_steps_ = 0;  // steps of the comparison run so far
    GenerationReport cached_report_;
    GenerationReport recompute_report_;
    bool has_cached_report_ = false;
    bool has_recompute_report_ = false;
};

}  // namespace inferscope::ui
