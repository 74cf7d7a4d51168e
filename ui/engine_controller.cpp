#include "ui/engine_controller.h"

#include "ui/engine_worker.h"

namespace inferscope::ui {

EngineController::EngineController(QObject* parent) : QObject(parent), worker_(new EngineWorker(latest_request_)) {
    qRegisterMetaType<ModelSummary>();
    qRegisterMetaType<GenerationRequest>();
    qRegisterMetaType<StepRecord>();
    qRegisterMetaType<GenerationReport>();
    thread_.setObjectName(QStringLiteral("inferscope-engine"));
    worker_->moveToThread(&thread_);
    connect(&thread_, &QThread::finished, worker_, &QObject::deleteLater);
    connect_worker();
    thread_.start();
}

EngineController::~EngineController() {
    cancel();
    thread_.quit();
    thread_.wait();
}

void EngineController::connect_worker() {
    // Every worker signal arrives queued on this (UI) thread; results of replaced requests
    // are dropped here, so the UI only ever sees the latest request.
    connect(worker_, &EngineWorker::preview_ready, this, [this](quint64 r, const ModelSummary& s) {
        if (is_current(r)) emit preview_ready(s);
    });
    connect(worker_, &EngineWorker::load_progress, this, [this](quint64 r, double f, const QString& stage) {
        if (is_current(r)) emit load_progress(f, stage);
    });
    connect(worker_, &EngineWorker::model_loaded, this, [this](quint64 r, const ModelSummary& s) {
        // A newer request may have replaced this one after the swap: the model is still the
        // one the worker now holds, so the summary is kept either way.
        model_ = s;
        has_model_ = true;
        emit model_loaded(s);
        (void)r;
    });
    connect(worker_, &EngineWorker::load_failed, this, [this](quint64 r, const QString& path, const QString& message) {
        if (is_current(r)) emit load_failed(path, message);
    });
    connect(worker_, &EngineWorker::load_cancelled, this, [this](quint64) { emit load_cancelled(); });
    connect(worker_, &EngineWorker::generation_started, this, [this](quint64 r, int n, const QString& text) {
        if (is_current(r)) emit generation_started(n, text);
    });
    connect(worker_, &EngineWorker::token_generated, this, [this](quint64 r, const QString& text) {
        if (is_current(r)) emit token_generated(text);
    });
    connect(worker_, &EngineWorker::step_completed, this, [this](quint64 r, const StepRecord& step) {
        if (is_current(r)) emit step_completed(step);
    });
    connect(worker_, &EngineWorker::generation_finished, this, [this](quint64 r, const GenerationReport& report) {
        if (is_current(r)) emit generation_finished(report);
    });
    connect(worker_, &EngineWorker::generation_failed, this, [this](quint64 r, const QString& message) {
        if (is_current(r)) emit generation_failed(message);
    });
    connect(worker_, &EngineWorker::request_finished, this, &EngineController::finish_request);
}

quint64 EngineController::start_request() {
    const quint64 request = ++latest_request_;  // makes any running request stale
    if (!busy_) {
        busy_ = true;
        emit busy_changed(true);
    }
    return request;
}

void EngineController::finish_request(quint64 request) {
    if (!is_current(request) || !busy_) return;
    busy_ = false;
    emit busy_changed(false);
}

void EngineController::load_model(const QString& path) {
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
    const quint64 request = ++latest_request_;
    finish_request(request);
}

void EngineController::set_threads(int threads) {
    QMetaObject::invokeMethod(worker_, [worker = worker_, threads] { worker->set_threads(threads); }, Qt::QueuedConnection);
}

}  // namespace inferscope::ui
