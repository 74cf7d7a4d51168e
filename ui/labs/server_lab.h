#pragma once
// The Server tab: a serving engine reached over HTTP (vLLM, llama-server, SGLang, TGI,
// `inferscope-cli serve`): the model it serves and its context length, its /metrics read as
// the panels' quantities (or "not exported by this server"), one streamed completion timed
// token by token (the step-latency chart, labelled remote), and a concurrency sweep giving
// aggregate tokens/s and per-request inter-token latency against streams at once, and the
// reference request trace replayed at its arrival times (the latency distribution it gets),
// and the next-token distribution from the server's top log-probabilities (soft labels as far
// as an API shows them: at most 20 tokens, their shares at a chosen temperature). Every
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
#include "engine/remote/next_token_logprobs.h"
#include "engine/remote/stream_bench.h"

class QCheckBox;
class QDoubleSpinBox;
class QGroupBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QTimer;

namespace inferscope::ui {

class ChartPanel;
class LatencyPanel;
class RemoteReplayPanel;
class RemoteSweepPanel;
class SoftLabelsPanel;

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
    // serve-sim's reference trace (Poisson arrivals at the rate box's value, the trace's own
    // prompt ids and output lengths), each request sent at its arrival time.
    void replay_trace();
    void cancel_sweep();  // the sweep or the replay
    // The top-k log-probabilities of the token after the prompt (greedy, one token), shown as
    // soft labels at the temperature box's value; changing it redraws without a request.
    void read_soft_labels();

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
    SoftLabelsPanel& soft_labels_panel() const { return *soft_labels_; }
    QSpinBox& top_logprobs_box() const { return *top_logprobs_; }
    QDoubleSpinBox& temperature_box() const { return *temperature_; }
    QSpinBox& replay_requests_box() const { return *replay_requests_; }
    QDoubleSpinBox& replay_rate_box() const { return *replay_rate_; }
    RemoteReplayPanel& replay_panel() const { return *replay_; }
    QLabel& soft_labels_line() const { return *soft_labels_line_; }

Q_SIGNALS:
    void target_changed(const QString& url, const QString& model);
    void metrics_read();
    void stream_finished();
    void sweep_finished();
    void replay_finished();
    void soft_labels_read();
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
    QGroupBox* build_soft_labels_box();
    QGroupBox* build_replay_box();
    void set_running(bool running);  // a sweep or a replay: their buttons off, Cancel on
    void show_soft_labels();

    remote::RemoteTarget target_;
    QString served_model_;
    std::atomic<bool> run_cancelled_{false};
    // The sweep and the replay share a slot: both load the server, so one at a time.
    TaskSlot connect_task_, metrics_task_, stream_task_, sweep_task_, soft_labels_task_;
    std::optional<remote::NextTokenLogprobs> next_token_;  // the last distribution read

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
    QSpinBox* top_logprobs_;
    QDoubleSpinBox* temperature_;
    QLabel* soft_labels_line_;
    SoftLabelsPanel* soft_labels_;
    QSpinBox* replay_requests_;
    QDoubleSpinBox* replay_rate_;
    QPushButton* replay_button_;
    RemoteReplayPanel* replay_;
};

// File › Connect to Server…: the URL (prefilled with `url`) and an optional API key; nullopt
// when cancelled.
std::optional<std::pair<QString, QString>> ask_server_target(QWidget* parent, const QString& url);

}  // namespace inferscope::ui
