#include "ui/panels/phases_chart_panel.h"

#include <QLineSeries>
#include <QValueAxis>

namespace inferscope::ui {

PhasesChartPanel::PhasesChartPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("prefill-vs-decode"), parent), prefill_(new QLineSeries()), decode_(new QLineSeries()) {
    chart()->setTitle(tr("Prefill vs decode: cost per token"));
    prefill_->setName(tr("prefill: ms per prompt token (x = prompt length)"));
    decode_->setName(tr("decode: ms per step (x = tokens in the cache)"));
    auto* x = new QValueAxis();
    x->setTitleText(tr("prompt length / cache length (tokens)"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("time per token (ms)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QXYSeries* s : std::initializer_list<QXYSeries*>{prefill_, decode_}) {
        s->setPointsVisible(true);
        chart()->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);
    fit_axes(64, 0.01);
}

void PhasesChartPanel::set_report(const PhasesReport& report) {
    QList<QPointF> prefill, decode;
    for (const PrefillRow& row : report.prefill) prefill.append(QPointF(row.n_prompt, row.ms_per_token));
    for (const DecodeRow& row : report.decode) decode.append(QPointF(row.context, row.step_ms));
    prefill_->replace(prefill);
    decode_->replace(decode);
    fit_axes(64, 0.01);
}

}  // namespace inferscope::ui
