#pragma once
// A lab job: a piece of engine work a panel asks for (a batch-size sweep, the prefill and
// decode tables, an outlier analysis), run on the engine worker thread where the loaded
// model lives. The panel builds the job (its kind and a function of the job context that
// returns the result); EngineController runs it, reports progress, and delivers the result
// as a signal on the UI thread. A newer job of the same kind cancels the older one, whose
// result is never delivered.
#include <QMetaType>
#include <QString>
#include <any>
#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>

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

struct LabJob {
    QString kind;  // jobs of the same kind replace each other ("batch-point", "phases", ...)
    // Runs on the worker thread; the returned value reaches the UI in lab_job_finished.
    std::function<std::any(const LabContext&)> run;
};

}  // namespace inferscope::ui

Q_DECLARE_METATYPE(std::any)
