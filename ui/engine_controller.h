#pragma once
// The UI's single entry point to the engine. It owns a worker thread with the
// EngineWorker on it, hands requests to it as queued calls, and forwards the worker's
// results as signals on the UI thread, dropping those of requests that a newer one has
// replaced. Starting a request cancels the one running; the UI thread never blocks.
//
// Steps and generated text arrive far faster than a screen refreshes (a small model makes
// hundreds of steps per second), so they are delivered in batches at most every
// kFlushIntervalMs; everything pending is delivered before a generation's report.
//
// Lab jobs (ui/lab_job.h) are the panels' engine work. They run on the same worker thread,
// in order with loads and generations, and are independent of them: each kind has at most
// one current job, and starting another of the same kind cancels it (its handle falls silent).
#include <QHash>
#include <QObject>
#include <QThread>
#include <QTimer>
#include <QVector>
#include <any>
#include <atomic>
#include <functional>
#include <type_traits>

#include "ui/engine_types.h"
#include "ui/lab_job.h"

namespace inferscope::ui {

class EngineWorker;

class EngineController : public QObject {
    Q_OBJECT
public:
    // `gpu_backend`: what set_vulkan(true) runs on (EngineWorker's); null: the Vulkan backend.
    explicit EngineController(QObject* parent = nullptr, BackendFactory gpu_backend = {});
    ~EngineController() override;

    // Loads a GGUF file, or the built-in synthetic model for an empty path. The current
    // model stays in use until the new one is complete; on failure it stays loaded. Running
    // lab jobs are cancelled.
    void load_model(const QString& path);
    void generate(const GenerationRequest& request);
    // Stops the running request (load or generation) at its next token or page.
    void cancel();
    // Runs the engine on `threads` CPU threads (0: one per physical core) from now on.
    void set_threads(int threads);
    // The Vulkan backend (true) or the CPU (false) for the loaded model and those loaded later.
    void set_vulkan(bool vulkan);
    // Generation runs on `weights` (derived from the loaded model, e.g. quantized in memory;
    // null: the file's own weights again) until the next load; model_loaded follows with
    // ModelSummary::weights = `description`. Lab jobs keep measuring the loaded file's model.
    void use_weights(std::shared_ptr<const Model> weights, const QString& description);

    // Queues `run` (a function of the LabContext) on the worker and returns the job's handle,
    // which the controller owns; an unfinished job of the same kind is cancelled (at its next
    // cancellation check) and its handle emits nothing more.
    template <typename Run>
    LabJobHandle<std::decay_t<std::invoke_result_t<Run&, const LabContext&>>>* run_lab_job(const QString& kind, Run run) {
        using Result = std::decay_t<std::invoke_result_t<Run&, const LabContext&>>;
        auto* handle = new LabJobHandle<Result>(kind, this);
        start_lab_job(*handle, [run = std::move(run)](const LabContext& context) { return std::any(run(context)); });
        return handle;
    }
    // Cancels the current job of `kind`, if any; its handle's cancelled() follows when it stops.
    void cancel_lab_job(const QString& kind);
    bool lab_job_running(const QString& kind) const { return lab_jobs_.contains(kind); }

    const EngineCallCounts& engine_calls() const { return engine_calls_; }

    bool busy() const { return busy_; }
    bool has_model() const { return has_model_; }
    const ModelSummary& model() const { return model_; }

Q_SIGNALS:
    void preview_ready(const inferscope::ui::ModelSummary& summary);
    void load_progress(double fraction, const QString& stage);
    void model_loaded(const inferscope::ui::ModelSummary& summary);
    void load_failed(const QString& path, const QString& message);
    void load_cancelled();
    void generation_started(int n_prompt_tokens, const QString& prompt_text);
    void text_generated(const QString& text);
    void steps_completed(const QVector<inferscope::ui::StepRecord>& steps);
    void generation_finished(const inferscope::ui::GenerationReport& report);
    void generation_failed(const QString& message);
    void busy_changed(bool busy);
    // Every job as it is queued, for observers of all of them (scripted runs, tests).
    void lab_job_started(inferscope::ui::LabJobWatcher* job);

private:
    quint64 start_request();
    void finish_request(quint64 request);
    bool is_current(quint64 request) const { return request == latest_request_.load(); }
    void connect_worker();
    void flush_pending();
    void start_lab_job(LabJobWatcher& handle, std::function<std::any(const LabContext&)> run);
    void connect_lab_jobs();
    // The handle of `job` while it is the current one of its kind, else null; with `ends`,
    // the job stops being current and its handle is deleted later.
    LabJobWatcher* current_lab_job(const QString& kind, quint64 job, bool ends);

    struct CurrentLabJob {
        quint64 id = 0;
        std::shared_ptr<std::atomic<bool>> cancelled;
    };

    static constexpr int kFlushIntervalMs = 30;
    EngineCallCounts engine_calls_;
    QThread thread_;
    EngineWorker* worker_;  // owned by thread_ (deleted when it finishes)
    std::atomic<quint64> latest_request_{0};
    QTimer flush_timer_;
    QVector<StepRecord> pending_steps_;
    QString pending_text_;
    bool busy_ = false;
    bool has_model_ = false;
    ModelSummary model_;
    quint64 last_lab_job_ = 0;
    QHash<QString, CurrentLabJob> lab_jobs_;  // by kind
    QHash<quint64, LabJobWatcher*> lab_job_handles_;  // every queued job's, by id, until it ends
};

}  // namespace inferscope::ui
