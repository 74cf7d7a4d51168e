#pragma once
// A lab job: a piece of engine work a panel asks for (a batch-size sweep, the prefill and
// decode tables, an outlier analysis), run on the engine worker thread where the loaded
// model lives. The panel gives EngineController::run_lab_job the job's kind and a function of
// the job context that returns the result; it gets back a LabJobHandle<Result> whose signals
// arrive on the UI thread, as QFutureWatcher's do. A newer job of the same kind cancels the
// older one, whose handle then emits nothing more.
#include <QMetaType>
#include <QObject>
#include <QString>
#include <any>
#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <utility>

#include "engine/core/progress.h"

namespace inferscope {
class Model;
}  // namespace inferscope

namespace inferscope::ui {

// Thrown by LabContext::throw_if_cancelled to unwind a job that was replaced or cancelled.
class LabJobCancelled : public std::runtime_error {
public:
    LabJobCancelled() : std::runtime_error("the lab job was cancelled") {}
};

// What a job sees while it runs on the worker thread.
class LabContext {
public:
    LabContext(std::shared_ptr<const Model> model, int threads, std::shared_ptr<const std::atomic<bool>> cancelled,
               std::function<void(double, const QString&)> report_progress)
        : model_(std::move(model)),
          threads_(threads),
          cancelled_(std::move(cancelled)),
          report_progress_(std::move(report_progress)) {}

    // The loaded model; null when none is (jobs that need one fail with a clear message
    // through require_model).
    const std::shared_ptr<const Model>& model() const { return model_; }
    const Model& require_model() const;
    // CPU threads for sessions the job builds (0: one per physical core), as the app uses.
    int threads() const { return threads_; }
    bool cancelled() const { return cancelled_->load(); }
    // Jobs call this between steps (or from the engine's progress hooks) to stop early.
    void throw_if_cancelled() const {
        if (cancelled()) throw LabJobCancelled();
    }
    // `fraction` in [0, 1]; `stage` says what is being measured.
    void progress(double fraction, const QString& stage) const { report_progress_(fraction, stage); }
    // The progress an engine call takes: its updates become this job's (worded by
    // `describe`), passed on only at another percent or text since a tiny model makes
    // thousands of steps per second; the call stops once the job is cancelled.
    Progress engine_progress(std::function<QString(const ProgressUpdate&)> describe) const;

private:
    std::shared_ptr<const Model> model_;
    int threads_;
    std::shared_ptr<const std::atomic<bool>> cancelled_;
    std::function<void(double, const QString&)> report_progress_;
};

// What the worker runs: the job's function with its result type erased, which the handle
// restores.
struct LabJob {
    QString kind;  // jobs of the same kind replace each other ("batch-point", "phases", ...)
    std::function<std::any(const LabContext&)> run;
};

// One job's signals on the UI thread, emitted while it is the current job of its kind: any
// number of progress(), then exactly one of finished(), failed() and cancelled(), after
// which the handle deletes itself (later, so slots connected to the last signal can read it).
class LabJobWatcher : public QObject {
    Q_OBJECT
public:
    LabJobWatcher(QString kind, QObject* parent) : QObject(parent), kind_(std::move(kind)) {}
    const QString& kind() const { return kind_; }
    quint64 id() const { return id_; }
    // The finished job's value, for code that records jobs of any kind; a panel reads
    // LabJobHandle<Result>::result().
    const std::any& result_value() const { return result_; }

Q_SIGNALS:
    void progress(double fraction, const QString& stage);
    void finished();
    void failed(const QString& message);
    void cancelled();

private:
    friend class EngineController;
    QString kind_;
    quint64 id_ = 0;
    std::any result_;
};

template <typename Result>
class LabJobHandle final : public LabJobWatcher {
public:
    using LabJobWatcher::LabJobWatcher;
    // Valid from finished() until the handle is deleted.
    const Result& result() const { return *std::any_cast<Result>(&result_value()); }
    // Calls `done(result())` when the job finishes, for as long as `context` lives.
    template <typename Done>
    QMetaObject::Connection on_finished(const QObject* context, Done done) {
        return QObject::connect(this, &LabJobWatcher::finished, context, [this, done = std::move(done)] { done(result()); });
    }
};

}  // namespace inferscope::ui

Q_DECLARE_METATYPE(std::any)
