#include "ui/panels/latency_panel.h"

#include <QLineSeries>
#include <QScatterSeries>
#include <QValueAxis>

namespace inferscope::ui {
namespace {

QScatterSeries* scatter(const QString& name, qreal size) {
    auto* s = new QScatterSeries();
    s->setName(name);
    s->setMarkerSize(size);
    return s;
}

QLineSeries* line_with_points(const QString& name) {
    auto* s = new QLineSeries();
    s->setName(name);
    s->setPointsVisible(true);
    return s;
}

}  // namespace

LatencyPanel::LatencyPanel(Source source, QWidget* parent)
    : ChartPanel(source == Source::Local ? QStringLiteral("step-latency") : QStringLiteral("server-step-latency"), parent),
      source_(source),
      prefill_(scatter(source == Source::Local ? tr("prefill") : tr("first token (remote: prompt, queue and network)"), 11)),
      decode_(line_with_points(source == Source::Local ? tr("decode") : tr("decode (remote: time between tokens)"))),
      recompute_prefill_(scatter(tr("prefill (no cache)"), 9)),
      recompute_decode_(line_with_points(tr("decode (no cache: recompute)"))) {
    auto* x = new QValueAxis();
    x->setTitleText(source == Source::Local ? tr("step") : tr("token as it arrived"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("wall time (ms)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{prefill_, decode_, recompute_prefill_, recompute_decode_}) {
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    offer_log_scale(Qt::Vertical);  // a spike or the first token can be 100x a decode step
    reset();
}

void LatencyPanel::reset() {
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{prefill_, decode_, recompute_prefill_, recompute_decode_}) {
        s->clear();
    }
    steps_ = 0;
    recompute_steps_ = 0;
    has_cached_report_ = false;
    has_recompute_report_ = false;
    update_title();
    fit_axes(16, 1);
}

void LatencyPanel::add_steps(const QVector<StepRecord>& steps) {
    // One append per series and batch: each append re-lays out the series' graphics item.
    QList<QPointF> prefill, decode, recompute_prefill, recompute_decode;
    for (const StepRecord& step : steps) {
        int& index = step.recompute ? recompute_steps_ : steps_;
        const QPointF point(index++, step.wall_ms);
        const bool is_prefill = step.phase != QStringLiteral("decode");
        if (step.recompute) {
            (is_prefill ? recompute_prefill : recompute_decode).append(point);
        } else {
            (is_prefill ? prefill : decode).append(point);
        }
    }
    if (!prefill.isEmpty()) prefill_->append(prefill);
    if (!decode.isEmpty()) decode_->append(decode);
    if (!recompute_prefill.isEmpty()) recompute_prefill_->append(recompute_prefill);
    if (!recompute_decode.isEmpty()) recompute_decode_->append(recompute_decode);
    fit_axes(16, 1);
}

void LatencyPanel::set_report(const GenerationReport& report) {
    (report.recompute ? recompute_report_ : cached_report_) = report;
    (report.recompute ? has_recompute_report_ : has_cached_report_) = true;
    update_title();
}

void LatencyPanel::update_title() {
    QString title = source_ == Source::Local ? tr("Per-step latency") : tr("Per-token latency of a streamed completion (remote)");
    if (has_cached_report_) {
        title += tr(" \u2014 time to first token %1 ms, decode %2 ms/token = %3 tokens/s")
                     .arg(cached_report_.ttft_ms, 0, 'f', 1)
                     .arg(cached_report_.decode_ms_per_token, 0, 'f', 2)
                     .arg(cached_report_.tokens_per_s, 0, 'f', 1);
    }
    if (has_recompute_report_ && has_cached_report_ && cached_report_.decode_ms_per_token > 0) {
        title += tr("; without cache %1 ms/token (%2\u00d7)")
                     .arg(recompute_report_.decode_ms_per_token, 0, 'f', 2)
                     .arg(recompute_report_.decode_ms_per_token / cached_report_.decode_ms_per_token, 0, 'f', 1);
    }
    chart()->setTitle(title);
}

int LatencyPanel::prefill_point_count() const { return static_cast<int>(prefill_->count()); }
int LatencyPanel::decode_point_count() const { return static_cast<int>(decode_->count()); }

}  // namespace inferscope::ui
