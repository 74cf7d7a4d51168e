#pragma once
// The UI's single entry point to the engine. It owns a worker thread with the
// EngineWorker on it, hands requests to it as queued calls, and forwards the worker's
// results as signals on the UI thread, dropping those of requests that a newer one has
// replaced. Starting a request cancels the one running; the UI thread never blocks.
#include <QObject>
#include <QThread>
#include <atomic>

#include "ui/engine_types.h"

namespace inferscope::ui {

class EngineWorker;

class EngineController : public QObject {
    Q_OBJECT
public:
    explicit EngineController(QObject* parent = nullptr);
    ~EngineController() override;

    // Loads a GGUF file, or the built-in synthetic model for an empty path. The current
    // model stays in use until the new one is complete; on failure it stays loaded.
    void load_model(const QString& path);
    void generate(const GenerationRequest& request);
    // Stops the running request (load or generation) at its next token or page.
    void cancel();
    void set_threads(int threads);

    bool busy() const { return busy_; }
    bool has_model() const { return has_model_; }
    const ModelSummary& model() const { return model_; }

signals:
    void preview_ready(const inferscope::ui::ModelSummary& summary);
    void load_progress(double fraction, const QString& stage);
    void model_loaded(const inferscope::ui::ModelSummary& summary);
    void load_failed(const QString& path, const QString& message);
    void load_cancelled();
    void generation_started(int n_prompt_tokens, const QString& prompt_text);
    void token_generated(const QString& text);
    void step_completed(const inferscope::ui::StepRecord& step);
    void generation_finished(const inferscope::ui::GenerationReport& report);
    void generation_failed(const QString& message);
    void busy_changed(bool busy);

private:
    quint64 start_request();
    void finish_request(quint64 request);
    bool is_current(quint64 request) const { return request == latest_request_.load(); }
    void connect_worker();

    QThread thread_;
    EngineWorker* worker_;  // owned by thread_ (deleted when it finishes)
    std::atomic<quint64> latest_request_{0};
    bool busy_ = false;
    bool has_model_ = false;
    ModelSummary model_;
};

}  // namespace inferscope::ui
