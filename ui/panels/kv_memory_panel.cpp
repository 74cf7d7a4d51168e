#include "ui/panels/kv_memory_panel.h"
#include "ui/number_format.h"

#include <QLineSeries>
#include <QPen>
#include <QValueAxis>
#include <algorithm>

namespace inferscope::ui {
namespace {

constexpr int kMinimumTokenSpan = 16;

QLineSeries* make_line(const QString& name) {
    auto* s = new QLineSeries();
    s->setName(name);
    return s;
}

void set_pen(QLineSeries* series, const QColor& color, Qt::PenStyle style, double width = 2.0) {
    QPen pen(color);
    pen.setStyle(style);
    pen.setWidthF(width);
    series->setPen(pen);
}

}  // namespace

KvMemoryPanel::KvMemoryPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("kv-memory"), parent),
      in_use_(make_line(tr("in use"))),
      reserved_(make_line(tr("reserved (whole blocks)"))),
      formula_(make_line(tr("formula"))),
      mha_(make_line(tr("MHA what-if"))),
      mqa_(make_line(tr("MQA what-if"))),
      global_layers_(make_line(tr("global layers"))),
      local_layers_(make_line(tr("local layers"))) {
    chart()->setTitle(tr("KV-cache memory"));
    auto* x = new QValueAxis();
    x->setTitleText(tr("tokens in the cache"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("KV cache (bytes)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    // Drawn in this order, so the measured lines lie on top of the formula they follow.
    for (QLineSeries* s : {formula_, mha_, mqa_, global_layers_, local_layers_, reserved_, in_use_}) {
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    style_series(false);
}

void KvMemoryPanel::style_series(bool dark) {
    set_pen(in_use_, dark ? QColor(0x4F, 0xC3, 0xF7) : QColor(0x15, 0x65, 0xC0), Qt::SolidLine, 3.0);
    set_pen(reserved_, dark ? QColor(0xFF, 0xB7, 0x4D) : QColor(0xE6, 0x51, 0x00), Qt::SolidLine);
    set_pen(formula_, dark ? QColor(0xE0, 0xE0, 0xE0) : QColor(0x42, 0x42, 0x42), Qt::DashLine, 1.5);
    set_pen(mha_, dark ? QColor(0xEF, 0x9A, 0x9A) : QColor(0xC6, 0x28, 0x28), Qt::DotLine);
    set_pen(mqa_, dark ? QColor(0xA5, 0xD6, 0xA7) : QColor(0x2E, 0x7D, 0x32), Qt::DotLine);
    set_pen(global_layers_, dark ? QColor(0xCE, 0x93, 0xD8) : QColor(0x6A, 0x1B, 0x9A), Qt::DashDotLine);
    set_pen(local_layers_, dark ? QColor(0x80, 0xDE, 0xEA) : QColor(0x00, 0x83, 0x8F), Qt::DashDotLine);
}

double KvMemoryPanel::local_layers_bytes_at(int tokens) const {
    if (model_.config.local_layer_count() == 0 || model_.config.n_layer == 0) return 0;
    const double layer_bytes = static_cast<double>(model_.kv_bytes_per_token(model_.config.n_head_kv)) / model_.config.n_layer;
    return model_.config.local_layer_count() * layer_bytes * std::min(tokens, model_.config.sliding_window);
}

void KvMemoryPanel::set_model(const ModelSummary& model) {
    model_ = model;
    chart()->setTitle(tr("KV-cache memory \u2014 2 \u00d7 %1 layers \u00d7 %2 KV heads \u00d7 %3 dims \u00d7 2 bytes (f16) = "
                         "%4 bytes/token")
                          .arg(model.config.n_layer)
                          .arg(model.config.n_head_kv)
                          .arg(model.config.head_dim)
                          .arg(model.kv_bytes_per_token(model.config.n_head_kv)));
    formula_->setName(tr("formula (%1 KV heads)").arg(model.config.n_head_kv));
    mha_->setName(tr("MHA what-if (%1 KV heads)").arg(model.config.n_head));
    mqa_->setName(tr("MQA what-if (1 KV head)"));
    // A what-if equal to the model's own layout says nothing new.
    mha_->setVisible(model.config.n_head != model.config.n_head_kv);
    mqa_->setVisible(model.config.n_head_kv != 1);
    const bool windowed = model.config.local_layer_count() > 0;
    global_layers_->setVisible(windowed);
    local_layers_->setVisible(windowed);
    if (windowed) {
        formula_->setName(tr("formula, every layer global (%1 KV heads)").arg(model.config.n_head_kv));
        global_layers_->setName(tr("%1 global layers").arg(model.config.n_layer - model.config.local_layer_count()));
        local_layers_->setName(
            tr("%1 local layers (window %2 tokens)").arg(model.config.local_layer_count()).arg(model.config.sliding_window));
    }
    reset();
}

void KvMemoryPanel::reset() {
    bytes_.clear();
    max_tokens_ = 0;
    extend_reference_lines(kMinimumTokenSpan);
    redraw();
}

void KvMemoryPanel::redraw() {
    double max_bytes = 0;
    for (auto it = bytes_.cbegin(); it != bytes_.cend(); ++it) {
        if (!it.key()->isVisible()) continue;
        for (const QPointF& p : it.value()) max_bytes = std::max(max_bytes, p.y());
    }
    const ByteUnit unit = byte_unit_for(max_bytes);
    for (QLineSeries* s : {in_use_, reserved_, formula_, mha_, mqa_, global_layers_, local_layers_}) {
        QList<QPointF> points = bytes_.value(s);
        for (QPointF& p : points) p.setY(p.y() / unit.bytes);
        s->replace(points);
    }
    current_axis(Qt::Vertical)->setTitleText(tr("KV cache (%1)").arg(unit.name));
    fit_axes(kMinimumTokenSpan, 1);
}

void KvMemoryPanel::extend_reference_lines(int tokens) {
    if (tokens <= max_tokens_) return;
    max_tokens_ = tokens;
    const auto line = [this, tokens](QLineSeries* s, qint64 bytes_per_token) {
        bytes_[s] = {QPointF(0, 0), QPointF(tokens, static_cast<double>(bytes_per_token) * tokens)};
    };
    line(formula_, model_.kv_bytes_per_token(model_.config.n_head_kv));
    if (mha_->isVisible()) line(mha_, model_.kv_bytes_per_token(model_.config.n_head));
    if (mqa_->isVisible()) line(mqa_, model_.kv_bytes_per_token(1));
    if (local_layers_->isVisible()) {
        const double layer_bytes = static_cast<double>(model_.kv_bytes_per_token(model_.config.n_head_kv)) / model_.config.n_layer;
        const int global = model_.config.n_layer - model_.config.local_layer_count();
        bytes_[global_layers_] = {QPointF(0, 0), QPointF(tokens, global * layer_bytes * tokens)};
        const int knee = std::min(tokens, model_.config.sliding_window);
        bytes_[local_layers_] = {QPointF(0, 0), QPointF(knee, local_layers_bytes_at(knee)),
                                 QPointF(tokens, local_layers_bytes_at(tokens))};
    }
}

void KvMemoryPanel::add_steps(const QVector<StepRecord>& steps) {
    QList<QPointF> in_use, reserved;
    int max_tokens = 0;
    for (const StepRecord& step : steps) {
        if (step.recompute) continue;
        in_use.append(QPointF(step.context_length, static_cast<double>(step.kv_bytes_in_use)));
        reserved.append(QPointF(step.context_length, static_cast<double>(step.kv_bytes_reserved)));
        max_tokens = std::max(max_tokens, step.context_length);
    }
    if (in_use.isEmpty()) return;
    bytes_[in_use_].append(in_use);
    bytes_[reserved_].append(reserved);
    extend_reference_lines(max_tokens);
    redraw();
}

QPointF KvMemoryPanel::last_in_use_point() const {
    const QList<QPointF> in_use = bytes_.value(in_use_);
    return in_use.isEmpty() ? QPointF() : in_use.back();
}

}  // namespace inferscope::ui
