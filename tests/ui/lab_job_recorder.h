#pragma once
// Records an EngineController's lab-job signals while it lives (the connections end with it),
// for the lab tests to wait on and inspect.
#include <QObject>
#include <QStringList>
#include <any>
#include <vector>

#include "ui/engine_controller.h"

namespace inferscope::ui {

struct LabRecorder {
    explicit LabRecorder(EngineController& c) {
        QObject::connect(&c, &EngineController::lab_job_finished, &scope,
                         [this](const QString& kind, quint64 job, const std::any& r) { finished.push_back({kind, job, r}); });
        QObject::connect(&c, &EngineController::lab_job_failed, &scope,
                         [this](const QString&, quint64, const QString& message) { failures << message; });
        QObject::connect(&c, &EngineController::lab_job_cancelled, &scope, [this](const QString& kind, quint64 job) {
            cancelled << job;
            cancelled_kinds << kind;
        });
        QObject::connect(&c, &EngineController::lab_job_progress, &scope,
                         [this](const QString& kind, quint64, double fraction, const QString& stage) {
                             progress << fraction;
                             progress_kinds << kind;
                             progress_stages << stage;
                         });
    }
    struct Finished {
        QString kind;
        quint64 job;
        std::any result;
    };
    // The last result of `kind`, or null.
    const std::any* result_of(const QString& kind) const {
        for (auto it = finished.rbegin(); it != finished.rend(); ++it) {
            if (it->kind == kind) return &it->result;
        }
        return nullptr;
    }
    QObject scope;
    std::vector<Finished> finished;
    QStringList failures;
    QList<quint64> cancelled;
    QStringList cancelled_kinds;
    QList<double> progress;
    QStringList progress_kinds;
    QStringList progress_stages;
};

}  // namespace inferscope::ui
