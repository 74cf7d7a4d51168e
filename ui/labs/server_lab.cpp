#include "ui/labs/server_lab.h"

#include <QCheckBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <cmath>
#include <exception>

#include "engine/remote/prometheus.h"
#include "engine/remote/served_model.h"
#include "engine/remote/server_metrics.h"
#include "engine/remote/trace_replay.h"
#include "engine/runtime/serving_sim.h"
#include "ui/engine_types.h"
#include "ui/panels/latency_panel.h"
#include "ui/panels/remote_replay_panel.h"
#include "ui/panels/remote_sweep_panel.h"
#include "ui/panels/soft_labels_panel.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

using remote::ServerQuantity;

QString reading_text(const remote::ServerReading& r) {
    if (!r.exported()) return ServerLab::tr("not exported by this server");
    if (r.histogram) {
        const remote::Histogram& h = *r.histogram;
        if (h.count <= 0) return ServerLab::tr("no observations yet");
        return ServerLab::tr("%1 observations, mean %2 ms, p50 %3 ms, p90 %4 ms")
            .arg(h.count, 0, 'f', 0)
            .arg(h.mean() * 1e3, 0, 'f', 1)
            .arg(h.quantile(0.5).value_or(NAN) * 1e3, 0, 'f', 1)
            .arg(h.quantile(0.9).value_or(NAN) * 1e3, 0, 'f', 1);
    }
    if (!r.value) return ServerLab::tr("exported, no value");
    const bool fraction = r.quantity == ServerQuantity::KvCacheUsage || r.quantity == ServerQuantity::PrefixCacheHitRate;
    return fraction ? ServerLab::tr("%1 %").arg(*r.value * 100, 0, 'f', 1) : QString::number(*r.value, 'g', 10);
}

// "1,2,4,8" as stream counts in 1..256; empty when malformed.
std::vector<int> parse_levels(const QString& text) {
    std::vector<int> levels;
    for (const QString& part : text.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const int n = part.trimmed().toInt(&ok);
        if (!ok || n < 1 || n > 256) return {};
        levels.push_back(n);
    }
    return levels;
}

}  // namespace

ServerLab::ServerLab(QWidget* parent)
    : QWidget(parent),
      target_label_(
          new QLabel(tr("No server: File › Connect to Server… (vLLM, llama-server, SGLang, TGI or inferscope-cli serve)"))),
      status_(new QLabel()),
      metrics_(new QTableWidget(static_cast<int>(ServerQuantity::Count), 2)),
      watch_(new QCheckBox(tr("Read every 2 s"))),
      watch_timer_(new QTimer(this)),
      prompt_(new QLineEdit(QStringLiteral("Once upon a time"))),
      tokens_(new QSpinBox()),
      levels_(new QLineEdit(QStringLiteral("1,2,4,8"))),
      stream_button_(new QPushButton(tr("Stream one"))),
      sweep_button_(new QPushButton(tr("Run sweep"))),
      cancel_button_(new QPushButton(tr("Cancel"))),
      latency_(new LatencyPanel(LatencyPanel::Source::Remote)),
      throughput_(new RemoteSweepPanel(RemoteSweepPanel::Metric::AggregateTokensPerS)),
      inter_token_(new RemoteSweepPanel(RemoteSweepPanel::Metric::InterTokenMs)),
      top_logprobs_(new QSpinBox()),
      temperature_(new QDoubleSpinBox()),
      soft_labels_line_(new QLabel()),
      soft_labels_(new SoftLabelsPanel(QStringLiteral("server-soft-labels"), tr("the server's top log-probabilities"))),
      replay_requests_(new QSpinBox()),
      replay_rate_(new QDoubleSpinBox()),
      replay_button_(new QPushButton(tr("Replay trace"))),
      replay_(new RemoteReplayPanel()) {
    setObjectName(QStringLiteral("server"));
    auto* weights_note =
        new QLabel(tr("Outliers, quantization and the full soft labels need the model's weights, which a server "
                      "does not expose: those tabs run on the model opened in this window. Here soft labels come "
                      "from the server's top log-probabilities (at most 20 tokens)."));
    for (QLabel* label : {target_label_, status_, weights_note, soft_labels_line_}) wrap_within_column(label);

    metrics_->setHorizontalHeaderLabels({tr("quantity"), tr("value")});
    metrics_->horizontalHeader()->setStretchLastSection(true);
    metrics_->verticalHeader()->hide();
    metrics_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    for (int q = 0; q < static_cast<int>(ServerQuantity::Count); ++q) {
        metrics_->setItem(q, 0,
                          new QTableWidgetItem(QString::fromUtf8(remote::quantity_name(static_cast<ServerQuantity>(q)).data())));
        metrics_->setItem(q, 1, new QTableWidgetItem(QStringLiteral("–")));
    }
    auto* read_button = new QPushButton(tr("Read /metrics"));
    connect(read_button, &QPushButton::clicked, this, &ServerLab::read_metrics);
    watch_timer_->setInterval(2000);
    connect(watch_timer_, &QTimer::timeout, this, &ServerLab::read_metrics);
    connect(watch_, &QCheckBox::toggled, this, [this](bool on) { on ? watch_timer_->start() : watch_timer_->stop(); });
    auto* metrics_box = new QGroupBox(tr("Server metrics"));
    auto* metrics_layout = new QVBoxLayout(metrics_box);
    auto* metrics_row = new QHBoxLayout();
    metrics_row->addWidget(read_button);
    metrics_row->addWidget(watch_);
    metrics_row->addStretch();
    metrics_layout->addLayout(metrics_row);
    metrics_layout->addWidget(metrics_);

    tokens_->setRange(1, 4096);
    tokens_->setValue(32);
    cancel_button_->setEnabled(false);
    connect(stream_button_, &QPushButton::clicked, this, &ServerLab::stream_one);
    connect(sweep_button_, &QPushButton::clicked, this, &ServerLab::run_sweep);
    connect(cancel_button_, &QPushButton::clicked, this, &ServerLab::cancel_sweep);
    auto* sweep_box = new QGroupBox(tr("Streamed completions: one, or a concurrency sweep"));
    auto* form = new QFormLayout();
    form->addRow(tr("Prompt"), prompt_);
    form->addRow(tr("Tokens per request"), tokens_);
    form->addRow(tr("Streams at once"), levels_);
    auto* sweep_layout = new QVBoxLayout(sweep_box);
    sweep_layout->addLayout(form);
    auto* sweep_row = new QHBoxLayout();
    sweep_row->addWidget(stream_button_);
    sweep_row->addWidget(sweep_button_);
    sweep_row->addWidget(cancel_button_);
    sweep_row->addStretch();
    sweep_layout->addLayout(sweep_row);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, layout->contentsMargins().top(), 0,
                               layout->contentsMargins().bottom());  // the scroll bar's room
    layout->addWidget(target_label_);
    layout->addWidget(weights_note);
    layout->addWidget(status_);
    // Controls in one column and the charts in another: side by side the two boxes would
    // make the tab wider than the window's smallest size leaves it.
    auto* controls = new QVBoxLayout();
    controls->addWidget(metrics_box, 1);
    controls->addWidget(sweep_box);
    controls->addWidget(build_replay_box());
    controls->addWidget(build_soft_labels_box());
    auto* charts = new QVBoxLayout();
    charts->addWidget(latency_);
    charts->addWidget(throughput_);
    charts->addWidget(inter_token_);
    charts->addWidget(replay_);
    charts->addWidget(soft_labels_);
    // Tall enough to read each chart's axes; the tab scrolls to show them all.
    for (ChartPanel* panel : panels()) panel->setMinimumHeight(fontMetrics().height() * 16);
    auto* body = new QWidget();
    auto* body_layout = new QHBoxLayout(body);
    body_layout->setContentsMargins(0, 0, 0, 0);
    body_layout->addLayout(controls, 1);
    body_layout->addLayout(charts, 2);
    // Five charts and four groups are taller than most windows: the tab scrolls vertically
    // instead of squeezing them.
    auto* scroll = new QScrollArea();
    scroll->setWidget(body);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setMinimumWidth(body->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width());
    layout->addWidget(scroll, 1);
}

ServerLab::~ServerLab() {
    run_cancelled_ = true;
    for (TaskSlot* slot : {&connect_task_, &metrics_task_, &stream_task_, &sweep_task_, &soft_labels_task_}) {
        if (slot->thread.joinable()) slot->thread.join();
    }
}

QList<ChartPanel*> ServerLab::panels() const { return {latency_, throughput_, inter_token_, replay_, soft_labels_}; }

QGroupBox* ServerLab::build_replay_box() {
    replay_requests_->setRange(1, static_cast<int>(remote::kMaxReplayRequests));
    replay_requests_->setValue(32);
    replay_rate_->setRange(0.25, 100.0);
    replay_rate_->setSingleStep(0.5);
    replay_rate_->setValue(4.0);
    connect(replay_button_, &QPushButton::clicked, this, &ServerLab::replay_trace);
    auto* box = new QGroupBox(tr("Request trace, sent at its arrivals"));
    auto* form = new QFormLayout();
    form->addRow(tr("Requests"), replay_requests_);
    form->addRow(tr("Arrivals per s"), replay_rate_);
    auto* layout = new QVBoxLayout(box);
    layout->addLayout(form);
    layout->addWidget(replay_button_);
    return box;
}

void ServerLab::set_running(bool running) {
    sweep_button_->setEnabled(!running);
    replay_button_->setEnabled(!running);
    cancel_button_->setEnabled(running);
}

void ServerLab::replay_trace() {
    if (target_.base_url.empty()) {
        status_->setText(tr("Connect to a server first (File › Connect to Server…)."));
        return;
    }
    TraceOptions trace;
    trace.requests = replay_requests_->value();
    trace.arrival = ArrivalPattern::Poisson;
    trace.arrivals_per_s = replay_rate_->value();
    remote::ReplayOptions options;
    options.model = served_model_.toStdString();
    options.ignore_eos = true;  // the trace fixes each request's output length
    run_cancelled_ = false;
    const bool started = start_task(sweep_task_, [this, target = target_, trace, options] {
        const Progress progress({}, [this] { return run_cancelled_.load(); });
        const std::vector<ServingRequest> requests = generate_trace(trace);
        std::optional<remote::ReplayReport> report;
        QString error;
        try {
            report = remote::replay_trace(target, requests, options, progress);
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        return std::function<void()>([this, report, error] {
            set_running(false);
            if (!report) {
                status_->setText(error);
                Q_EMIT failed(error);
                return;
            }
            replay_->set_report(*report);
            status_->setText((run_cancelled_ ? tr("Replay cancelled. ") : QString()) + replay_->figures());
            Q_EMIT replay_finished();
        });
    });
    if (!started) return;
    set_running(true);
    status_->setText(tr("Replaying %1 requests at %2 per s…").arg(trace.requests).arg(trace.arrivals_per_s));
}

QGroupBox* ServerLab::build_soft_labels_box() {
    top_logprobs_->setRange(1, 20);
    top_logprobs_->setValue(5);
    temperature_->setRange(0.25, 4.0);
    temperature_->setSingleStep(0.25);
    temperature_->setValue(1.0);
    soft_labels_->clear(tr("Next token: read the server's top log-probabilities"));
    connect(temperature_, &QDoubleSpinBox::valueChanged, this, [this] { show_soft_labels(); });
    auto* read_button = new QPushButton(tr("Read top log-probabilities"));
    connect(read_button, &QPushButton::clicked, this, &ServerLab::read_soft_labels);
    auto* box = new QGroupBox(tr("Next-token soft labels"));
    auto* form = new QFormLayout();
    form->addRow(tr("Top k"), top_logprobs_);
    form->addRow(tr("Temperature"), temperature_);
    auto* layout = new QVBoxLayout(box);
    layout->addLayout(form);
    layout->addWidget(read_button);
    layout->addWidget(soft_labels_line_);
    return box;
}

void ServerLab::read_soft_labels() {
    if (target_.base_url.empty()) {
        status_->setText(tr("Connect to a server first (File › Connect to Server…)."));
        return;
    }
    start_task(soft_labels_task_, [this, target = target_, model = served_model_.toStdString(),
                                   prompt = prompt_->text().toStdString(), k = top_logprobs_->value()] {
        remote::HttpClient client(target);
        const remote::NextTokenLogprobs read = remote::read_next_token_logprobs(client, model, prompt, k);
        return std::function<void()>([this, read] {
            next_token_ = read;
            show_soft_labels();
            status_->setText(tr("Read the top %1 log-probabilities of the next token.").arg(read.top.size()));
            Q_EMIT soft_labels_read();
        });
    });
}

// At T = 1 the server's probabilities hold a known part of the distribution; at any T the
// bars are the tokens' shares of that part, whose ratios are exact.
void ServerLab::show_soft_labels() {
    if (!next_token_) return;
    const SoftLabels labels = soft_labels_from_top_logprobs(next_token_->top, temperature_->value());
    soft_labels_->set_labels(labels);
    soft_labels_line_->setText(tr("The %1 tokens hold %2 % of the distribution at T = 1; the bars are their shares at "
                                  "T = %3. p(top) / p(k-th) = %4 (exact at any T).")
                                   .arg(labels.top.size())
                                   .arg(labels.known_mass.value_or(NAN) * 100, 0, 'f', 1)
                                   .arg(labels.temperature, 0, 'f', 2)
                                   .arg(labels.top_to_kth_ratio, 0, 'g', 4));
}

bool ServerLab::start_task(TaskSlot& slot, std::function<std::function<void()>()> work) {
    if (slot.running) return false;
    if (slot.thread.joinable()) slot.thread.join();  // finished: running is cleared last
    slot.running = true;
    slot.thread = std::thread([this, &slot, work = std::move(work)] {
        std::function<void()> done;
        try {
            done = work();
        } catch (const std::exception& e) {
            done = [this, message = QString::fromUtf8(e.what())] {
                status_->setText(message);
                Q_EMIT failed(message);
            };
        }
        QMetaObject::invokeMethod(this, std::move(done), Qt::QueuedConnection);
        slot.running = false;
    });
    return true;
}

void ServerLab::connect_to(const QString& url, const QString& api_key) {
    remote::RemoteTarget target;
    target.base_url = url.trimmed().toStdString();
    target.api_key = api_key.toStdString();
    target.timeout_s = 10;
    status_->setText(tr("Connecting to %1…").arg(url));
    start_task(connect_task_, [this, target] {
        remote::HttpClient client(target);
        const remote::ServedModel served = remote::describe_served_model(client);
        return std::function<void()>([this, target, served] {
            target_ = target;
            served_model_ = QString::fromStdString(served.id);
            const QString context =
                served.context_tokens
                    ? tr("context %1 tokens (%2)").arg(*served.context_tokens).arg(QString::fromStdString(served.context_source))
                    : tr("the server reports no context length");
            target_label_->setText(tr("Server %1 serving %2; %3").arg(target_url(), served_model_, context));
            status_->setText(tr("Connected."));
            Q_EMIT target_changed(target_url(), served_model_);
            read_metrics();
        });
    });
}

void ServerLab::read_metrics() {
    if (target_.base_url.empty()) return;
    start_task(metrics_task_, [this, target = target_] {
        remote::HttpClient client(target);
        const remote::ServerMetrics m = remote::read_server_metrics(remote::parse_prometheus_text(client.get("/metrics")));
        std::vector<std::pair<QString, QString>> rows;
        for (const remote::ServerReading& r : m.readings) {
            rows.emplace_back(QString::fromUtf8(remote::quantity_name(r.quantity).data()), reading_text(r));
        }
        return std::function<void()>([this, rows, engine = QString::fromStdString(m.engine)] {
            show_metrics(rows);
            status_->setText(engine.isEmpty() ? tr("Metrics read; no engine's names recognised.")
                                              : tr("Metrics read (%1 names).").arg(engine));
            Q_EMIT metrics_read();
        });
    });
}

void ServerLab::show_metrics(const std::vector<std::pair<QString, QString>>& rows) {
    for (size_t i = 0; i < rows.size() && static_cast<int>(i) < metrics_->rowCount(); ++i) {
        metrics_->item(static_cast<int>(i), 1)->setText(rows[i].second);
    }
}

void ServerLab::run_sweep() {
    if (target_.base_url.empty()) {
        status_->setText(tr("Connect to a server first (File › Connect to Server…)."));
        return;
    }
    const std::vector<int> levels = parse_levels(levels_->text());
    if (levels.empty()) {
        status_->setText(tr("Streams at once: numbers from 1 to 256 separated by commas, e.g. 1,2,4,8."));
        return;
    }
    const remote::CompletionRequest request = sweep_request();
    run_cancelled_ = false;
    const bool started = start_task(sweep_task_, [this, target = target_, request, levels] {
        const Progress progress({}, [this] { return run_cancelled_.load(); });
        try {
            auto done = remote::sweep_concurrency(target, request, levels, progress);
            return std::function<void()>([this, done = std::move(done)] { show_levels(done); });
        } catch (const std::exception& e) {
            return std::function<void()>([this, message = QString::fromUtf8(e.what())] {
                set_running(false);
                status_->setText(message);
                Q_EMIT failed(message);
            });
        }
    });
    if (!started) return;
    set_running(true);
    status_->setText(tr("Sweeping %1 levels…").arg(levels.size()));
}

remote::CompletionRequest ServerLab::sweep_request() const {
    remote::CompletionRequest request;
    request.model = served_model_.toStdString();
    request.prompt = prompt_->text().toStdString();
    request.max_tokens = tokens_->value();
    request.ignore_eos = true;
    return request;
}

void ServerLab::stream_one() {
    if (target_.base_url.empty()) {
        status_->setText(tr("Connect to a server first (File › Connect to Server…)."));
        return;
    }
    start_task(stream_task_, [this, target = target_, request = sweep_request()] {
        remote::HttpClient client(target);
        const remote::StreamTiming timing = remote::stream_completion(client, request);
        return std::function<void()>([this, timing] { show_stream(timing); });
    });
}

// The first piece's time from the request as the "prefill" point, then each gap between
// pieces: the step-latency chart's two phases as a client of the server sees them.
void ServerLab::show_stream(const remote::StreamTiming& timing) {
    QVector<StepRecord> steps;
    for (size_t i = 0; i < timing.arrivals_ms.size(); ++i) {
        StepRecord step;
        step.step = static_cast<qint64>(i);
        step.phase = i == 0 ? QStringLiteral("prefill") : QStringLiteral("decode");
        step.n_tokens = 1;
        step.wall_ms = i == 0 ? timing.ttft_ms : timing.arrivals_ms[i] - timing.arrivals_ms[i - 1];
        steps.push_back(step);
    }
    GenerationReport report;
    report.n_generated = timing.completion_tokens;
    report.ttft_ms = timing.ttft_ms;
    if (timing.arrivals_ms.size() > 1 && timing.completion_tokens > 1) {
        report.decode_ms_per_token = (timing.arrivals_ms.back() - timing.arrivals_ms.front()) / (timing.completion_tokens - 1);
        report.tokens_per_s = 1000.0 / report.decode_ms_per_token;
    }
    latency_->reset();
    latency_->add_steps(steps);
    latency_->set_report(report);
    status_->setText(tr("Streamed %1 tokens in %2 pieces; finish reason %3.")
                         .arg(timing.completion_tokens)
                         .arg(timing.arrivals_ms.size())
                         .arg(QString::fromStdString(timing.finish_reason)));
    Q_EMIT stream_finished();
}

void ServerLab::cancel_sweep() { run_cancelled_ = true; }

void ServerLab::show_levels(const std::vector<remote::ConcurrencyLevel>& levels) {
    throughput_->set_levels(levels);
    inter_token_->set_levels(levels);
    set_running(false);
    QStringList parts;
    for (const remote::ConcurrencyLevel& l : levels) {
        parts << tr("%1 streams: %2 tokens/s, inter-token %3 ms")
                     .arg(l.streams)
                     .arg(l.tokens_per_s, 0, 'f', 1)
                     .arg(l.itl_ms_median, 0, 'f', 2);
    }
    status_->setText((run_cancelled_ ? tr("Sweep cancelled. ") : QString()) + parts.join(QStringLiteral("; ")));
    Q_EMIT sweep_finished();
}

std::optional<std::pair<QString, QString>> ask_server_target(QWidget* parent, const QString& url) {
    QDialog dialog(parent);
    dialog.setWindowTitle(ServerLab::tr("Connect to Server"));
    auto* url_edit = new QLineEdit(url.isEmpty() ? QStringLiteral("http://127.0.0.1:8000") : url);
    auto* key_edit = new QLineEdit();
    key_edit->setEchoMode(QLineEdit::Password);
    key_edit->setPlaceholderText(ServerLab::tr("optional; kept in memory only"));
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    QObject::connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    auto* form = new QFormLayout(&dialog);
    form->addRow(ServerLab::tr("Base URL"), url_edit);
    form->addRow(ServerLab::tr("API key"), key_edit);
    form->addRow(new QLabel(ServerLab::tr("Requests go to this URL only; the key is sent to it alone.")));
    form->addRow(buttons);
    if (dialog.exec() != QDialog::Accepted) return std::nullopt;
    return std::make_pair(url_edit->text().trimmed(), key_edit->text());
}

}  // namespace inferscope::ui
