#include "ui/engine_controller.h"

#include <sys/resource.h>

#include <utility>

#include "ui/engine_worker.h"

namespace inferscope::ui {
namespace {
constexpr int kEngineNiceValue = 5;
}  // namespace

EngineController::EngineController(QObject* parent, BackendFactory gpu_backend)
    : QObject(parent), worker_(new EngineWorker(latest_request_, engine_calls_, std::move(gpu_backend))) {
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<GenerationRequest>();
    qRegisterMetaType<StepRecord>();
    qRegisterMetaType<GenerationReport>();
    qRegisterMetaType<std::any>();
    thread_.setObjectName(QStringLiteral("inferscope-engine"));
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    flush_timer_.setSingleShot(true);
    flush_timer_.setInterval(kFlushIntervalMs);
    connect(&flush_timer_, &QTimer::timeout, this, &EngineController::flush_pending);
    connect_worker();
    connect_lab_jobs();
    // The engine's threads (this one and the pool threads it creates, which inherit its nice
    // value on Linux) run at a lower priority than the UI thread: they use whole cores for
    // seconds at a time, and the window must keep answering meanwhile.
    connect(&thread_, &QThread::started, worker_, [] { ::setpriority(PRIO_PROCESS, 0, kEngineNiceValue); });
    thread_.start();
}

EngineController::~EngineController() {
    cancel();
    for (const CurrentLabJob& job : std::as_const(lab_jobs_)) job.cancelled->store(true);
    thread_.quit();
    thread_.wait();
}

void EngineController::connect_worker() {
    // Every worker signal arrives queued on this (UI) thread; results of replaced requests
    // are dropped here, so the UI only ever sees the latest request.
    connect(worker_, &EngineWorker::preview_ready, this, [this](quint64 r, const ModelSummary& s) {
        if (is_current(r)) Q_EMIT preview_ready(s);
    });
    connect(worker_, &EngineWorker::load_progress, this, [this](quint64 r, double f, const QString& stage) {
        if (is_current(r)) Q_EMIT load_progress(f, stage);
    });
    connect(worker_, &EngineWorker::model_loaded, this, [this](quint64 r, const ModelSummary& s) {
        // A newer request may have replaced this one after the swap: the model is still the
        // one the worker now holds, so the summary is kept either way.
        model_ = s;
        has_model_ = true;
        Q_EMIT model_loaded(s);
        (void)r;
    });
    connect(worker_, &EngineWorker::load_failed, this, [this](quint64 r, const QString& path, const QString& message) {
        if (is_current(r)) Q_EMIT load_failed(path, message);
    });
    connect(worker_, &EngineWorker::load_cancelled, this, [this](quint64) { Q_EMIT load_cancelled(); });
    connect(worker_, &EngineWorker::generation_started, this, [this](quint64 r, int n, const QString& text) {
        if (is_current(r)) Q_EMIT generation_started(n, text);
    });
    connect(worker_, &EngineWorker::token_generated, this, [this](quint64 r, const QString& text) {
        if (!is_current(r)) return;
        pending_text_ += text;
        if (!flush_timer_.isActive()) flush_timer_.start();
    });
    connect(worker_, &EngineWorker::step_completed, this, [this](quint64 r, const StepRecord& step) {
        if (!is_current(r)) return;
        pending_steps_.push_back(step);
        if (!flush_timer_.isActive()) flush_timer_.start();
    });
    connect(worker_, &EngineWorker::generation_finished, this, [this](quint64 r, const GenerationReport& report) {
        if (!is_current(r)) return;
        flush_pending();
        Q_EMIT generation_finished(report);
    });
    connect(worker_, &EngineWorker::generation_failed, this, [this](quint64 r, const QString& message) {
        if (!is_current(r)) return;
        flush_pending();
        Q_EMIT generation_failed(message);
    });
    connect(worker_, &EngineWorker::request_finished, this, [this](quint64 r) {
        if (is_current(r)) flush_pending();
        finish_request(r);
    });
}

void EngineController::flush_pending() {
    flush_timer_.stop();
    if (!pending_steps_.isEmpty()) Q_EMIT steps_completed(std::exchange(pending_steps_, {}));
    if (!pending_text_.isEmpty()) Q_EMIT text_generated(std::exchange(pending_text_, {}));
}

quint64 EngineController::start_request() {
    // Makes any running request stale; what it still had pending is dropped.
    const quint64 request = ++latest_request_;
    flush_timer_.stop();
    pending_steps_.clear();
    pending_text_.clear();
    if (!busy_) {
        busy_ = true;
        Q_EMIT busy_changed(true);
    }
    return request;
}

void EngineController::finish_request(quint64 request) {
    if (!is_current(request) || !busy_) return;
    busy_ = false;
    Q_EMIT busy_changed(false);
}

void EngineController::load_model(const QString& path) {
    // Lab jobs measure the model they started on; their results would not fit the new one.
    for (const CurrentLabJob& job : std::as_const(lab_jobs_)) job.cancelled->store(true);
    const quint64 request = start_request();
    QMetaObject::invokeMethod(worker_, [worker = worker_, request, path] { worker->load(request, path); },
                              Qt::QueuedConnection);
}

void EngineController::generate(const GenerationRequest& request_data) {
    const quint64 request = start_request();
    QMetaObject::invokeMethod(worker_, [worker = worker_, request, request_data] { worker->generate(request, request_data); },
                              Qt::QueuedConnection);
}

void EngineController::cancel() {
    flush_pending();  // what was produced before Stop stays visible
    const quint64 request = ++latest_request_;
    finish_request(request);
}

void EngineController::set_threads(int threads) {
    const quint64 request = start_request();
    QMetaObject::invokeMethod(worker_, [worker = worker_, request, threads] { worker->set_threads(request, threads); },
                              Qt::QueuedConnection);
}

void EngineController::set_vulkan(bool vulkan) {
    const quint64 request = start_request();
    QMetaObject::invokeMethod(worker_, [worker = worker_, request, vulkan] { worker->set_vulkan(request, vulkan); },
                              Qt::QueuedConnection);
}

void EngineController::use_weights(std::shared_ptr<const Model> weights, const QString& description) {
    const quint64 request = start_request();
    QMetaObject::invokeMethod(
        worker_,
        [worker = worker_, request, weights = std::move(weights), description] {
            worker->use_weights(request, weights, description);
        },
        Qt::QueuedConnection);
}

void EngineController::connect_lab_jobs() {
    connect(worker_, &EngineWorker::lab_job_progress, this,
            [this](const QString& kind, quint64 job, double fraction, const QString& stage) {
                if (LabJobWatcher* handle = current_lab_job(kind, job, false)) Q_EMIT handle->progress(fraction, stage);
            });
    connect(worker_, &EngineWorker::lab_job_finished, this, [this](const QString& kind, quint64 job, const std::any& result) {
        if (LabJobWatcher* handle = current_lab_job(kind, job, true)) {
            handle->result_ = result;
            Q_EMIT handle->finished();
        }
    });
    connect(worker_, &EngineWorker::lab_job_failed, this, [this](const QString& kind, quint64 job, const QString& message) {
        if (LabJobWatcher* handle = current_lab_job(kind, job, true)) Q_EMIT handle->failed(message);
    });
    connect(worker_, &EngineWorker::lab_job_cancelled, this, [this](const QString& kind, quint64 job) {
        if (LabJobWatcher* handle = current_lab_job(kind, job, true)) Q_EMIT handle->cancelled();
    });
}

LabJobWatcher* EngineController::current_lab_job(const QString& kind, quint64 job, bool ends) {
    LabJobWatcher* handle = lab_job_handles_.value(job);
    if (ends) {
        lab_job_handles_.remove(job);
        if (handle != nullptr) handle->deleteLater();
    }
    const auto it = lab_jobs_.constFind(kind);
    if (it == lab_jobs_.cend() || it->id != job) return nullptr;
    if (ends) lab_jobs_.erase(it);
    return handle;
}

void EngineController::start_lab_job(LabJobWatcher& handle, std::function<std::any(const LabContext&)> run) {
    const auto previous = lab_jobs_.constFind(handle.kind());
    if (previous != lab_jobs_.cend()) previous->cancelled->store(true);
    CurrentLabJob current{++last_lab_job_, std::make_shared<std::atomic<bool>>(false)};
    handle.id_ = current.id;
    lab_jobs_.insert(handle.kind(), current);
    lab_job_handles_.insert(current.id, &handle);
    QMetaObject::invokeMethod(
        worker_,
        [worker = worker_, id = current.id, job = LabJob{handle.kind(), std::move(run)},
         cancelled = std::shared_ptr<const std::atomic<bool>>(current.cancelled)] { worker->run_lab_job(id, job, cancelled); },
        Qt::QueuedConnection);
    Q_EMIT lab_job_started(&handle);
}

void EngineController::cancel_lab_job(const QString& kind) {
    const auto it = lab_jobs_.constFind(kind);
    if (it != lab_jobs_.cend()) it->cancelled->store(true);
}

}  // namespace inferscope::ui
