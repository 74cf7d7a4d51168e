#pragma once
// The Server tab: a serving engine reached over HTTP (vLLM, llama-server, SGLang, TGI,
// `inferscope-cli serve`): the model it serves and its context length, its /metrics read as
// the panels' quantities (or "not exported by this server"), one streamed completion timed
// token by token (the step-latency chart, labelled remote), and a concurrency sweep giving
// aggregate tokens/s and per-request inter-token latency against streams at once. Every
// request runs on a thread of its own and comes back as a queued call, so the window never
// waits on the network. Requests go only to the URL the user typed; the API key is kept in
// memory, never in the settings.
#include <QWidget>
#include <atomic>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include "engine/remote/http_client.h"
#include "engine/remote/stream_bench.h"

class QCheckBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTimer;

namespace inferscope::ui {

class ChartPanel;
class LatencyPanel;
class RemoteSweepPanel;

class ServerLab : public QWidget {
    Q_OBJECT
public:
    explicit ServerLab(QWidget* parent = nullptr);
    ~ServerLab() override;  // cancels the sweep and waits for the requests in flight

    // Reads the server's /v1/models (and its context length); target_changed on success,
    // failed with the reason otherwise (the previous target is kept).
    void connect_to(const QString& url, const QString& api_key);
    void read_metrics();
    // One streamed completion of the sweep's prompt and length, plotted token by token.
    void stream_one();
    void run_sweep();
    void cancel_sweep();

    QString target_url() const { return QString::fromStdString(target_.base_url); }
    QString served_model() const { return served_model_; }
    QList<ChartPanel*> panels() const;
    LatencyPanel& latency_panel() const { return *latency_; }
    RemoteSweepPanel& throughput_panel() const { return *throughput_; }
    RemoteSweepPanel& inter_token_panel() const { return *inter_token_; }
    QTableWidget& metrics_table() const { return *metrics_; }
    QLineEdit& levels_edit() const { return *levels_; }
    QSpinBox& tokens_box() const { return *tokens_; }
    QLabel& status() const { return *status_; }

Q_SIGNALS:
    void target_changed(const QString& url, const QString& model);
    void metrics_read();
    void stream_finished();
    void sweep_finished();
    void failed(const QString& message);

private:
    // A request on a thread of its own: `work` there, then `done` (or `failed` with the
    // error) on the UI thread. One task per slot at a time; false if that slot is busy.
    struct TaskSlot {
        std::thread thread;
        std::atomic<bool> running{false};
    };
    bool start_task(TaskSlot& slot, std::function<std::function<void()>()> work);
    void show_metrics(const std::vector<std::pair<QString, QString>>& rows);
    void show_levels(const std::vector<remote::ConcurrencyLevel>& levels);
    void show_stream(const remote::StreamTiming& timing);
    remote::CompletionRequest sweep_request() const;

    remote::RemoteTarget target_;
    QString served_model_;
    std::atomic<bool> sweep_cancelled_{false};
    TaskSlot connect_task_, metrics_task_, stream_task_, sweep_task_;

    QLabel* target_label_;
    QLabel* status_;
    QTableWidget* metrics_;
    QCheckBox* watch_;
    QTimer* watch_timer_;
    QLineEdit* prompt_;
    QSpinBox* tokens_;
    QLineEdit* levels_;
    QPushButton* stream_button_;
    QPushButton* sweep_button_;
    QPushButton* cancel_button_;
    LatencyPanel* latency_;
    RemoteSweepPanel* throughput_;
    RemoteSweepPanel* inter_token_;
};

// File › Connect to Server…: the URL (prefilled with `url`) and an optional API key; nullopt
// when cancelled.
std::optional<std::pair<QString, QString>> ask_server_target(QWidget* parent, const QString& url);

}  // namespace inferscope::ui
