// The Server tab against `serve` over loopback: File › Connect to Server…'s connection (the
// served model in the tab, the window title and the status bar), /metrics in the table, one
// stream plotted token by token, a concurrency sweep plotted, the reference trace replayed,
// soft labels from the server's top log-probabilities, and a server that is not there as a
// clear error in a tab that still works.
#include <gtest/gtest.h>

#include <QDoubleSpinBox>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTableWidget>

#include "engine/remote/server_metrics.h"
#include "support/loopback_server.h"
#include "support/running_server.h"
#include "ui/labs/server_lab.h"
#include "ui/main_window.h"
#include "ui/panels/latency_panel.h"
#include "ui/panels/remote_replay_panel.h"
#include "ui/panels/remote_sweep_panel.h"
#include "ui/panels/soft_labels_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

using inferscope::testing::kEngineWaitMs;

QString table_value(const ServerLab& lab, remote::ServerQuantity q) {
    return lab.metrics_table().item(static_cast<int>(q), 1)->text();
}

TEST(ServerTab, ConnectsReadsMetricsAndSweepsAgainstServe) {
    testing::RunningServer server;
    MainWindow window(/*interactive=*/false);
    ServerLab& lab = window.server_lab();
    bool metrics_read = false;
    QObject::connect(&lab, &ServerLab::metrics_read, [&] { metrics_read = true; });
    lab.connect_to(QString::fromStdString(server.url()), QString());
    ASSERT_TRUE(wait_until([&] { return metrics_read; }, kEngineWaitMs)) << lab.status().text().toStdString();
    EXPECT_EQ(lab.served_model(), QStringLiteral("stories260K"));
    EXPECT_TRUE(window.windowTitle().contains(QString::fromStdString(server.url()))) << window.windowTitle().toStdString();
    EXPECT_EQ(table_value(lab, remote::ServerQuantity::RequestsRunning), QStringLiteral("0"));
    EXPECT_EQ(table_value(lab, remote::ServerQuantity::Preemptions), QStringLiteral("not exported by this server"));

    bool streamed = false;
    QObject::connect(&lab, &ServerLab::stream_finished, [&] { streamed = true; });
    lab.tokens_box().setValue(8);
    lab.stream_one();
    ASSERT_TRUE(wait_until([&] { return streamed; }, kEngineWaitMs)) << lab.status().text().toStdString();
    EXPECT_EQ(lab.latency_panel().export_name(), QStringLiteral("server-step-latency"));
    EXPECT_EQ(lab.latency_panel().prefill_point_count(), 1);
    // One point per piece of text: the first as "prefill", a gap for each later one.
    const QRegularExpressionMatch pieces = QRegularExpression(QStringLiteral("^Streamed 8 tokens in (\\d+) pieces")).match(lab.status().text());
    ASSERT_TRUE(pieces.hasMatch()) << lab.status().text().toStdString();
    EXPECT_EQ(lab.latency_panel().prefill_point_count() + lab.latency_panel().decode_point_count(), pieces.captured(1).toInt());
    EXPECT_TRUE(lab.latency_panel().plot_data().title.contains(QStringLiteral("remote")));

    bool swept = false;
    QObject::connect(&lab, &ServerLab::sweep_finished, [&] { swept = true; });
    lab.levels_edit().setText(QStringLiteral("1,2"));
    lab.tokens_box().setValue(8);
    lab.run_sweep();
    ASSERT_TRUE(wait_until([&] { return swept; }, kEngineWaitMs)) << lab.status().text().toStdString();
    const PlotData throughput = lab.throughput_panel().plot_data();
    ASSERT_EQ(throughput.series.size(), 1);
    ASSERT_EQ(throughput.series[0].points.size(), 2);
    EXPECT_EQ(throughput.series[0].points[0].x(), 1);
    EXPECT_EQ(throughput.series[0].points[1].x(), 2);
    EXPECT_GT(throughput.series[0].points[0].y(), 0);
    EXPECT_TRUE(window.chart_panels().contains(&lab.throughput_panel()));

    metrics_read = false;
    lab.read_metrics();
    ASSERT_TRUE(wait_until([&] { return metrics_read; }, kEngineWaitMs));
    EXPECT_EQ(table_value(lab, remote::ServerQuantity::GenerationTokens), QStringLiteral("32"));  // 8, then 8 + 2 x 8
}

TEST(ServerTab, AServerThatIsNotThereIsAClearErrorAndTheTabStillWorks) {
    const int port = inferscope::testing::closed_loopback_port();
    ServerLab lab;
    QString error;
    QObject::connect(&lab, &ServerLab::failed, [&](const QString& message) { error = message; });
    const QString url = QStringLiteral("http://127.0.0.1:%1").arg(port);
    lab.connect_to(url, QString());
    ASSERT_TRUE(wait_until([&] { return !error.isEmpty(); }, kEngineWaitMs));
    EXPECT_TRUE(error.contains(url)) << error.toStdString();
    EXPECT_TRUE(lab.target_url().isEmpty());
    lab.run_sweep();  // no target: says so, sends nothing
    EXPECT_TRUE(lab.status().text().contains(QStringLiteral("Connect to a server first")));

    testing::RunningServer server;
    bool connected = false;
    QObject::connect(&lab, &ServerLab::target_changed, [&] { connected = true; });
    lab.connect_to(QString::fromStdString(server.url()), QString());
    ASSERT_TRUE(wait_until([&] { return connected; }, kEngineWaitMs)) << lab.status().text().toStdString();
    EXPECT_EQ(lab.target_url(), QString::fromStdString(server.url()));
}

// The server's top-k log-probabilities as bars: k tokens, descending shares of the k that sum
// to one; a new temperature redraws them from the same reply (exact ratios) without a request.
TEST(ServerTab, SoftLabelsFromTheServersTopLogprobs) {
    testing::RunningServer server;
    ServerLab lab;
    bool connected = false, read = false;
    QObject::connect(&lab, &ServerLab::target_changed, [&] { connected = true; });
    QObject::connect(&lab, &ServerLab::soft_labels_read, [&] { read = true; });
    lab.connect_to(QString::fromStdString(server.url()), QString());
    ASSERT_TRUE(wait_until([&] { return connected; }, kEngineWaitMs)) << lab.status().text().toStdString();
    lab.top_logprobs_box().setValue(6);
    lab.read_soft_labels();
    ASSERT_TRUE(wait_until([&] { return read; }, kEngineWaitMs)) << lab.status().text().toStdString();
    const auto shares = [&] {
        const PlotData data = lab.soft_labels_panel().plot_data();
        return data.series.isEmpty() ? QVector<QPointF>()
                                     : QVector<QPointF>(data.series[0].points.begin(), data.series[0].points.end());
    };
    const QVector<QPointF> at_one = shares();
    ASSERT_EQ(at_one.size(), 6);
    double sum = 0;
    for (int i = 0; i < at_one.size(); ++i) {
        sum += at_one[i].y();
        if (i > 0) {
            EXPECT_LE(at_one[i].y(), at_one[i - 1].y());
        }
    }
    EXPECT_NEAR(sum, 1.0, 1e-9);
    EXPECT_TRUE(lab.soft_labels_line().text().contains(QStringLiteral("of the distribution at T = 1")));
    EXPECT_EQ(lab.soft_labels_panel().export_name(), QStringLiteral("server-soft-labels"));

    lab.temperature_box().setValue(2.0);
    const QVector<QPointF> at_two = shares();
    ASSERT_EQ(at_two.size(), 6);
    // p_i / p_j at T = 2 is the square root of the ratio at T = 1.
    EXPECT_NEAR(at_two[0].y() / at_two[5].y(), std::sqrt(at_one[0].y() / at_one[5].y()), 1e-9);
}

// The reference trace against `serve`: every request finishes, and both distributions reach
// 100 % of them with latencies that only grow.
TEST(ServerTab, ReplaysTheReferenceTraceAgainstServe) {
    testing::RunningServer server;
    ServerLab lab;
    bool connected = false, replayed = false;
    QObject::connect(&lab, &ServerLab::target_changed, [&] { connected = true; });
    QObject::connect(&lab, &ServerLab::replay_finished, [&] { replayed = true; });
    lab.connect_to(QString::fromStdString(server.url()), QString());
    ASSERT_TRUE(wait_until([&] { return connected; }, kEngineWaitMs)) << lab.status().text().toStdString();
    lab.replay_requests_box().setValue(6);
    lab.replay_rate_box().setValue(50);
    lab.replay_trace();
    ASSERT_TRUE(wait_until([&] { return replayed; }, kEngineWaitMs)) << lab.status().text().toStdString();
    EXPECT_TRUE(lab.status().text().startsWith(QStringLiteral("6 requests (0 failed)"))) << lab.status().text().toStdString();
    const PlotData data = lab.replay_panel().plot_data();
    ASSERT_EQ(data.series.size(), 2);
    for (const PlotSeries& series : data.series) {
        ASSERT_EQ(series.points.size(), 6) << series.name.toStdString();
        EXPECT_DOUBLE_EQ(series.points.back().y(), 100.0);
        for (int i = 1; i < series.points.size(); ++i) EXPECT_GE(series.points[i].x(), series.points[i - 1].x());
    }
    EXPECT_EQ(lab.replay_panel().export_name(), QStringLiteral("server-trace-latency"));
}

}  // namespace
}  // namespace inferscope::ui
