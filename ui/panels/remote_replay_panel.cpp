#include "ui/panels/remote_replay_panel.h"

#include <QLineSeries>
#include <QValueAxis>

#include "ui/labs/lab_measurements.h"

namespace inferscope::ui {
namespace {

QList<QPointF> distribution_points(std::vector<double> latencies_ms) {
    QList<QPointF> points;
    for (const auto& [ms, percent] : cumulative_shares(std::move(latencies_ms))) points.append(QPointF(ms / 1000.0, percent));
    return points;
}

}  // namespace

RemoteReplayPanel::RemoteReplayPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("server-trace-latency"), parent), ttft_(new QLineSeries()), end_to_end_(new QLineSeries()) {
    chart()->setTitle(tr("Server: the reference trace's latency distribution (remote)"));
    ttft_->setName(tr("time to first token"));
    end_to_end_->setName(tr("end-to-end"));
    auto* x = new QValueAxis();
    x->setTitleText(tr("latency from arrival (s)"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("requests within it (%)"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* series : {ttft_, end_to_end_}) {
        chart()->addSeries(series);
        series->attachAxis(x);
        series->attachAxis(y);
    }
    set_axes(x, y);
    fit_axes(0.1, 100);
}

void RemoteReplayPanel::set_report(const remote::ReplayReport& report) {
    std::vector<double> ttft_ms, e2e_ms;
    for (const remote::ReplayedRequest& r : report.requests) {
        if (!r.finished()) continue;
        ttft_ms.push_back(r.ttft_ms());
        e2e_ms.push_back(r.e2e_ms());
    }
    ttft_->replace(distribution_points(std::move(ttft_ms)));
    end_to_end_->replace(distribution_points(std::move(e2e_ms)));
    fit_axes(0.1, 100);
    figures_ = tr("%1 requests (%2 failed): TTFT p50 %3 ms, p90 %4 ms, p99 %5 ms; end-to-end p50 %6 ms, p90 %7 ms, "
                  "p99 %8 ms; inter-token p50 %9 ms; %10 tokens/s")
                   .arg(report.requests.size())
                   .arg(report.failed)
                   .arg(report.ttft_ms(50), 0, 'f', 1)
                   .arg(report.ttft_ms(90), 0, 'f', 1)
                   .arg(report.ttft_ms(99), 0, 'f', 1)
                   .arg(report.e2e_ms(50), 0, 'f', 1)
                   .arg(report.e2e_ms(90), 0, 'f', 1)
                   .arg(report.e2e_ms(99), 0, 'f', 1)
                   .arg(report.itl_ms(50), 0, 'f', 2)
                   .arg(report.tokens_per_s(), 0, 'f', 1);
}

}  // namespace inferscope::ui
