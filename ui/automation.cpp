#include "ui/automation.h"

#include <QPlainTextEdit>
#include <cstdio>

#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/labs/batching_lab.h"
#include "ui/labs/outliers_lab.h"
#include "ui/labs/soft_labels_lab.h"
#include "ui/labs/speculative_lab.h"
#include "ui/labs/phases_lab.h"
#include "ui/labs/quantization_lab.h"
#include "ui/main_window.h"
#include "ui/panels/chart_panel.h"

namespace inferscope::ui {

AutomationRunner::AutomationRunner(MainWindow& window, AutomationOptions options, QObject* parent)
    : QObject(parent), window_(window), options_(std::move(options)) {
    EngineController& c = window_.controller();
    connect(&c, &EngineController::load_failed, this, [this](const QString&, const QString& message) { fail(message); });
    connect(&c, &EngineController::generation_failed, this, [this](const QString& message) { fail(message); });
    // Each stage ends when the controller goes idle.
    connect(&c, &EngineController::busy_changed, this, [this](bool busy) {
        if (!busy) on_idle();
    });
    connect(&c, &EngineController::lab_job_started, this, [this](LabJobWatcher* job) {
        connect(job, &LabJobWatcher::finished, this, [this, kind = job->kind()] { on_lab_job_done(kind); });
        connect(job, &LabJobWatcher::failed, this, [this, kind = job->kind()](const QString& message) {
            if (pending_lab_jobs_.contains(kind)) fail(message);
        });
    });
}

void AutomationRunner::start() {
    stage_ = Stage::Loading;
    window_.open_model(options_.model);
}

void AutomationRunner::on_idle() {
    if (failed_ || stage_ == Stage::Done) return;
    if (stage_ == Stage::Loading) {
        if (!window_.controller().has_model()) return fail(QObject::tr("the model did not load"));
        if (options_.generate > 0) {
            stage_ = Stage::Generating;
            if (!options_.prompt.isEmpty()) window_.generation_panel().set_prompt(options_.prompt);
            window_.generation_panel().set_n_predict(options_.generate);
            window_.start_generation();
            return;
        }
    }
    if (options_.measure_labs && stage_ != Stage::MeasuringLabs) return measure_labs();
    if (stage_ != Stage::MeasuringLabs) complete();
}

void AutomationRunner::measure_labs() {
    stage_ = Stage::MeasuringLabs;
    // The replay follows the sweep; each lab reports its result through the controller.
    pending_lab_jobs_ = {BatchingLab::kSweepJob, BatchingLab::kReplayJob, PhasesLab::kJob};
    if (!options_.prompt.isEmpty()) window_.generation_panel().set_prompt(options_.prompt);
    window_.batching_lab().sweep();
    window_.phases_lab().measure();
    // The quantization tab: its current scheme's per-matrix errors and one quality row.
    pending_lab_jobs_.insert(QuantizationLab::kAnalysisJob);
    window_.quantization_lab().run_now();
    pending_lab_jobs_.insert(QuantizationLab::kQualityJob);
    window_.quantization_lab().measure_quality();
    // The real replay serves the replay's trace on the model; the speculative run uses the prompt.
    pending_lab_jobs_.insert(BatchingLab::kRealReplayJob);
    window_.batching_lab().replay_for_real();
    pending_lab_jobs_.insert(SpeculativeLab::kJob);
    window_.speculative_lab().measure();
    // Without a prompt there is nothing to analyse; the outlier and soft-label charts stay empty.
    if (!window_.generation_panel().prompt_edit()->toPlainText().trimmed().isEmpty()) {
        pending_lab_jobs_.insert(OutliersLab::kJob);
        window_.outliers_lab().run_now();
        pending_lab_jobs_.insert(SoftLabelsLab::kJob);
        window_.soft_labels_lab().run_now();
    }
}

void AutomationRunner::on_lab_job_done(const QString& kind) {
    if (stage_ != Stage::MeasuringLabs || !pending_lab_jobs_.remove(kind)) return;
    if (pending_lab_jobs_.isEmpty()) complete();
}

QString measurement_summary(const MainWindow& window) {
    const ExportProvenance p = window.export_provenance();
    QString out = QStringLiteral("model: %1\nfingerprint: %2\nbackend: %3\ntime: %4\n\n")
                      .arg(p.model, p.fingerprint, p.backend, p.time.toUTC().toString(Qt::ISODate));
    out += QStringLiteral("| chart | measurement | points |\n| --- | --- | ---: |\n");
    QStringList empty;
    for (const ChartPanel* panel : window.chart_panels()) {
        const PlotData data = panel->plot_data();
        qsizetype points = 0;
        for (const PlotSeries& s : data.series) points += s.points.size();
        if (points == 0) {
            empty << panel->export_name();
            continue;
        }
        QString title = data.title;
        title.replace(QLatin1Char('|'), QLatin1String("\\|")).replace(QLatin1Char('\n'), QLatin1Char(' '));
        out += QStringLiteral("| %1 | %2 | %3 |\n").arg(panel->export_name(), title).arg(points);
    }
    if (!empty.isEmpty()) out += QStringLiteral("\nnot measured: %1\n").arg(empty.join(QStringLiteral(", ")));
    return out;
}

void AutomationRunner::complete() {
    stage_ = Stage::Done;
    if (options_.generate > 0) {
        std::printf("%s\n", qPrintable(window_.generation_panel().output_view()->toPlainText()));
    }
    if (options_.quit && (options_.generate > 0 || options_.measure_labs)) {
        std::printf("\n%s", qPrintable(measurement_summary(window_)));
    }
    std::fflush(stdout);
    if (!options_.export_dir.isEmpty()) {
        const QStringList errors = window_.export_all_charts(options_.export_dir);
        if (!errors.isEmpty()) return fail(errors.join(QLatin1Char('\n')));
        std::fprintf(stderr, "exported %d charts to %s\n", static_cast<int>(window_.chart_panels().size()),
                     qPrintable(options_.export_dir));
    }
    if (!options_.screenshot_dir.isEmpty()) {
        const QStringList errors = window_.save_screenshots(options_.screenshot_dir);
        if (!errors.isEmpty()) return fail(errors.join(QLatin1Char('\n')));
        std::fprintf(stderr, "saved screenshots to %s\n", qPrintable(options_.screenshot_dir));
    }
    Q_EMIT finished(0);
}

void AutomationRunner::fail(const QString& message) {
    if (failed_) return;
    failed_ = true;
    stage_ = Stage::Done;
    std::fprintf(stderr, "error: %s\n", qPrintable(message));
    Q_EMIT finished(1);
}

}  // namespace inferscope::ui
