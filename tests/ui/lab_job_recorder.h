#pragma once
// Records every lab job an EngineController starts while it lives (the connections end with
// it), for the lab tests to wait on and inspect.
#include <QObject>
#include <QStringList>
#include <any>
#include <vector>

#include "ui/engine_controller.h"

namespace inferscope::ui {

struct LabRecorder {
    explicit LabRecorder(EngineController& c) {
        QObject::connect(&c, &EngineController::lab_job_started, &scope, [this](LabJobWatcher* job) {
            const QString kind = job->kind();
            const quint64 id = job->id();
            QObject::connect(job, &LabJobWatcher::finished, &scope,
                             [this, job, kind, id] { finished.push_back({kind, id, job->result_value()}); });
            QObject::connect(job, &LabJobWatcher::failed, &scope, [this](const QString& message) { failures << message; });
            QObject::connect(job, &LabJobWatcher::cancelled, &scope, [this, kind, id] {
                cancelled << id;
                cancelled_kinds << kind;
            });
            QObject::connect(job, &LabJobWatcher::progress, &scope, [this, kind](double fraction, const QString& stage) {
                progress << fraction;
                progress_kinds << kind;
                progress_stages << stage;
            });
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
    int finished_count(const QString& kind) const {
        int count = 0;
        for (const Finished& f : finished) count += f.kind == kind ? 1 : 0;
        return count;
    }
    QList<quint64> finished_ids(const QString& kind) const {
        QList<quint64> ids;
        for (const Finished& f : finished) {
            if (f.kind == kind) ids << f.job;
        }
        return ids;
    }
    QStringList stages_of(const QString& kind) const {
        QStringList stages;
        for (qsizetype i = 0; i < progress_stages.size(); ++i) {
            if (progress_kinds[i] == kind) stages << progress_stages[i];
        }
        return stages;
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
