#pragma once
// The object that owns the engine. It lives on the controller's worker thread; every slot
// runs there, so the UI thread never waits on inference. Results go out as signals
// tagged with the request id; work for a request that is no longer the latest stops at the
// next token or page.
#include <QObject>
#include <atomic>
#include <memory>
#include <vector>

#include "ui/engine_types.h"
#include "ui/lab_job.h"

namespace inferscope {
class Model;
class InferenceSession;
class GgufFile;
}  // namespace inferscope

namespace inferscope::ui {

class EngineWorker : public QObject {
    Q_OBJECT
public:
    // `gpu_backend`: what set_vulkan(true) runs on; null: the Vulkan backend.
    EngineWorker(const std::atomic<quint64>& latest_request, EngineCallCounts& calls, BackendFactory gpu_backend = {});
    ~EngineWorker() override;

    // Rebuilds the session on `threads` CPU threads (0: one per physical core); the model
    // stays loaded and model_loaded is emitted again with the new backend description.
    void set_threads(quint64 request, int threads);
    // Runs the model on the Vulkan device (true) or the CPU; rebuilds the session of a loaded
    // model, and falls back to the CPU with load_failed when no Vulkan device can be used. A
    // device lost during a generation (DeviceLostError) moves the model to the CPU too: the
    // generation fails saying so, and model_loaded follows with the CPU backend.
    void set_vulkan(quint64 request, bool vulkan);

    // Generation runs on `weights` (derived from the loaded model, e.g. quantized; null: the
    // file's own weights) until the next load; model_loaded follows with summary.weights set
    // to `description`. Lab jobs keep seeing the loaded file's model.
    void use_weights(quint64 request, std::shared_ptr<const Model> weights, const QString& description);

    // Each runs to completion (or cancellation) on the worker thread.
    void load(quint64 request, const QString& path);
    void generate(quint64 request, const GenerationRequest& request_data);
    // Runs a panel's job on the loaded model; it stops early once `cancelled` is set. Exactly
    // one of lab_job_finished, lab_job_failed and lab_job_cancelled follows.
    void run_lab_job(quint64 job, const LabJob& lab_job, std::shared_ptr<const std::atomic<bool>> cancelled);

Q_SIGNALS:
    void preview_ready(quint64 request, const inferscope::ui::ModelSummary& summary);
    void load_progress(quint64 request, double fraction, const QString& stage);
    void model_loaded(quint64 request, const inferscope::ui::ModelSummary& summary);
    void load_failed(quint64 request, const QString& path, const QString& message);
    void load_cancelled(quint64 request);
    void generation_started(quint64 request, int n_prompt_tokens, const QString& prompt_text);
    void token_generated(quint64 request, const QString& text);
    void step_completed(quint64 request, const inferscope::ui::StepRecord& step);
    void generation_finished(quint64 request, const inferscope::ui::GenerationReport& report);
    void generation_failed(quint64 request, const QString& message);
    // Emitted last for every load and generate call, whatever its outcome.
    void request_finished(quint64 request);
    void lab_job_progress(const QString& kind, quint64 job, double fraction, const QString& stage);
    void lab_job_finished(const QString& kind, quint64 job, const std::any& result);
    void lab_job_failed(const QString& kind, quint64 job, const QString& message);
    void lab_job_cancelled(const QString& kind, quint64 job);

private:
    bool is_stale(quint64 request) const { return request != latest_request_.load(); }
    void count_engine_call();  // at the top of every entry point
    void load_model(quint64 request, const QString& path);
    // A new session for the loaded model after a change of threads or backend.
    void rebuild_session(quint64 request);
    // The loaded model's session made anew where it now runs (threads, backend), announced with
    // model_loaded; where that fails, load_failed, the old session kept and later ones on the CPU.
    void replace_session(quint64 request);
    const std::shared_ptr<const Model>& session_model() const { return weights_ ? weights_ : model_; }
    std::unique_ptr<InferenceSession> make_session(const std::shared_ptr<const Model>& model) const;
    struct ReadySession {
        std::unique_ptr<InferenceSession> session;
        bool warmed_up = false;
        QString gpu_lost;  // why it runs on the CPU though the GPU was chosen, or empty
    };
    // A session made and warmed up where the model is to run. A GPU its driver gives up on the
    // way leaves the model on the CPU (and later sessions there) rather than not loaded.
    ReadySession make_ready_session(quint64 request, const std::shared_ptr<const Model>& model);
    // The session's warm-up (a GPU's kernels compiled before the first request times them),
    // with its progress; false where the backend has none.
    bool warm_up(quint64 request, InferenceSession& session);
    ModelSummary describe(const Model& model, const InferenceSession& session, const QString& path) const;
    bool page_in_weights(quint64 request, const Model& model);
    std::vector<int32_t> prompt_tokens(const GenerationRequest& request_data, QString& rendered) const;
    GenerationReport run_generation(quint64 request, const GenerationRequest& request_data, bool use_cache);

    const std::atomic<quint64>& latest_request_;
    EngineCallCounts& calls_;
    BackendFactory gpu_backend_;
    int threads_ = 0;
    bool vulkan_ = false;
    std::shared_ptr<const Model> model_;
    std::unique_ptr<InferenceSession> session_;
    std::shared_ptr<const Model> weights_;  // what the session runs instead of model_, or null
    QString weights_description_;
    ModelSummary summary_;
};

// What the app shows about a file, read from its header alone (no weights are touched).
ModelSummary summarize_file(const GgufFile& file);

}  // namespace inferscope::ui
