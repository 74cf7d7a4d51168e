#include "ui/labs/batching_lab.h"

#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include "ui/engine_controller.h"
#include "ui/flow_layout.h"
#include "ui/labs/lab_progress.h"
#include "ui/labs/repeats.h"
#include "ui/panels/batch_curve_panel.h"
#include "ui/panels/serving_replay_panel.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

constexpr int kMaxBatch = 64;
const BatchBenchOptions kBenchDefaults;

QSpinBox* spin_box(int min, int max, int value, const QString& suffix) {
    auto* box = new QSpinBox();
    box->setRange(min, max);
    box->setValue(value);
    box->setSuffix(suffix);
    return box;
}

QStringList job_kinds() {
    return {BatchingLab::kPointJob, BatchingLab::kSweepJob, BatchingLab::kReplayJob, BatchingLab::kRealReplayJob};
}

}  // namespace

BatchingLab::BatchingLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      throughput_(new BatchCurvePanel(BatchCurvePanel::Metric::AggregateTokensPerS)),
      step_(new BatchCurvePanel(BatchCurvePanel::Metric::MsPerStep)),
      replay_(new ServingReplayPanel()) {
    setObjectName(QStringLiteral("batching"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(build_controls());
    auto* curves = new QHBoxLayout();
    curves->addWidget(throughput_);
    curves->addWidget(step_);
    layout->addLayout(curves, 1);
    layout->addWidget(build_replay_controls());
    layout->addWidget(replay_, 1);
    connect_controller();
    set_model_ready(controller_.has_model());
}

QWidget* BatchingLab::build_controls() {
    auto* box = new QWidget();
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new QHBoxLayout();
    batch_slider_ = new QSlider(Qt::Horizontal);
    batch_slider_->setRange(1, kMaxBatch);
    batch_slider_->setToolTip(tr("Moving it measures a short batched decode at this batch size on the loaded model"));
    batch_label_ = new QLabel(tr("B = %1").arg(1));
    sweep_button_ = new QPushButton(tr("&Sweep"));
    sweep_button_->setToolTip(tr("Measure the whole curve: B = 1, 2, 4 … 64 (press again to cancel)"));
    cancel_button_ = new QPushButton(tr("Cancel"));
    cancel_button_->setToolTip(tr("Stop the running measurement, replay or real run"));
    cancel_button_->setEnabled(false);
    progress_ = new QProgressBar();
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(200);
    progress_->hide();
    auto* slider_label = new QLabel(tr("&Batch size:"));
    slider_label->setToolTip(tr("B: sequences decoded together in one step"));
    slider_label->setBuddy(batch_slider_);
    row->addWidget(slider_label);
    row->addWidget(batch_slider_, 1);
    row->addWidget(batch_label_);
    repeats_ = make_repeats_box();
    QWidget* repeats = labelled_field(tr("R&epeats:"), repeats_);
    repeats->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Preferred);
    row->addWidget(repeats);
    row->addWidget(sweep_button_);
    row->addWidget(cancel_button_);
    row->addWidget(progress_);
    layout->addLayout(row);
    knee_label_ = new QLabel(tr("Move the slider or sweep to measure the curve."));
    wrap_within_column(knee_label_);
    status_ = new QLabel();
    layout->addWidget(knee_label_);
    layout->addWidget(status_);
    connect(batch_slider_, &QSlider::valueChanged, this, [this](int batch) {
        batch_label_->setText(tr("B = %1").arg(batch));
        measure(kPointJob, {batch});
    });
    connect(sweep_button_, &QPushButton::clicked, this, &BatchingLab::sweep);
    connect(cancel_button_, &QPushButton::clicked, this, &BatchingLab::cancel);
    return box;
}

QWidget* BatchingLab::build_replay_controls() {
    const TraceOptions defaults;
    auto* box = new QWidget();
    auto* row = new FlowLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    requests_ = spin_box(1, 4096, defaults.requests, tr(" requests"));
    median_tokens_ = spin_box(1, 4096, static_cast<int>(defaults.median_output_tokens), tr(" tokens median"));
    max_tokens_ = spin_box(1, 4096, defaults.max_output_tokens, tr(" tokens max"));
    slots_ = spin_box(1, kMaxBatch, 8, tr(" slots"));
    real_replay_button_ = new QPushButton(tr("Run for &real"));
    real_replay_button_->setToolTip(
        tr("Serve this trace on the loaded model (greedy), static then continuous, and plot the measured latencies "
           "beside the simulated ones"));
    row->addWidget(new QLabel(tr("Replayed trace (all arriving at once):")));
    for (QSpinBox* s : {requests_, median_tokens_, max_tokens_, slots_}) {
        row->addWidget(s);
        connect(s, &QSpinBox::valueChanged, this, &BatchingLab::trace_changed);
    }
    row->addWidget(real_replay_button_);
    connect(real_replay_button_, &QPushButton::clicked, this, &BatchingLab::replay_for_real);
    return box;
}

void BatchingLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, [this] {
        // Points of another model (or thread count) would mix two curves.
        rows_.clear();
        throughput_->set_rows({}, 0);
        step_->set_rows({}, 0);
        knee_label_->setText(tr("Move the slider or sweep to measure the curve."));
        replay_->clear_real_result();
        set_model_ready(true);
        Q_EMIT rows_changed();
    });
}

void BatchingLab::watch(LabJobWatcher& job) {
    const bool sweep = job.kind() == kSweepJob;
    if (sweep || job.kind() == kRealReplayJob) show_lab_progress(job, *progress_);
    // Connected after the job's result slot, so the rows are in when the buttons update.
    connect(&job, &LabJobWatcher::finished, this, [this, sweep] {
        if (sweep) end_sweep();
        update_cancel_button();
    });
    const auto ended = [this, sweep](const QString& status) {
        if (sweep) end_sweep();
        status_->setText(status);
        update_cancel_button();
    };
    connect(&job, &LabJobWatcher::failed, this, [ended](const QString& message) { ended(tr("Measurement failed: %1").arg(message)); });
    connect(&job, &LabJobWatcher::cancelled, this, [ended] { ended(tr("Cancelled.")); });
    update_cancel_button();
}

void BatchingLab::set_model_ready(bool ready) {
    batch_slider_->setEnabled(ready);
    sweep_button_->setEnabled(ready);
    real_replay_button_->setEnabled(ready);
}

void BatchingLab::update_cancel_button() {
    bool running = false;
    for (const QString& kind : job_kinds()) running |= controller_.lab_job_running(kind);
    cancel_button_->setEnabled(running);
    progress_->setVisible(controller_.lab_job_running(kSweepJob) || controller_.lab_job_running(kRealReplayJob));
}

void BatchingLab::cancel() {
    for (const QString& kind : job_kinds()) {
        if (controller_.lab_job_running(kind)) controller_.cancel_lab_job(kind);
    }
}

void BatchingLab::set_run_settings(int prompt_tokens, int generate_tokens, std::vector<int> sweep_batches) {
    point_settings_.prompt_tokens = prompt_tokens;
    point_settings_.generate_tokens = generate_tokens;
    sweep_batches_ = std::move(sweep_batches);
}

void BatchingLab::sweep() {
    // While a sweep runs, the same button cancels it.
    if (controller_.lab_job_running(kSweepJob)) {
        controller_.cancel_lab_job(kSweepJob);
        return;
    }
    progress_->setValue(0);
    sweep_button_->setText(tr("Cancel &sweep"));
    measure(kSweepJob, sweep_batches_);
}

void BatchingLab::end_sweep() { sweep_button_->setText(tr("&Sweep")); }

void BatchingLab::measure(const QString& kind, std::vector<int> batch_sizes) {
    BatchRunSettings settings = point_settings_;
    settings.batch_sizes = std::move(batch_sizes);
    settings.repetitions = repeats_->value();
    status_->setText(tr("Measuring…"));
    auto* job = controller_.run_lab_job(kind, [settings](const LabContext& context) { return measure_batch_sizes(context, settings); });
    job->on_finished(this, [this, sweep = kind == kSweepJob](const BatchBenchReport& report) { add_rows(report, sweep); });
    watch(*job);
}

void BatchingLab::add_rows(const BatchBenchReport& report, bool replace_all) {
    if (replace_all) rows_.clear();
    for (const BatchBenchRow& row : report.rows) rows_[row.batch] = row;
    const std::vector<BatchBenchRow> sorted = rows();
    const int knee = knee_batch();
    throughput_->set_rows(sorted, knee);
    step_->set_rows(sorted, knee);
    knee_label_->setText(knee_text());
    status_->setText(tr("Each point: B sequences with %1 cached tokens each, then %2 decode steps of B tokens; the mean "
                        "of the repeats.%3")
                         .arg(point_settings_.prompt_tokens)
                         .arg(point_settings_.generate_tokens)
                         .arg(noisy_points_text()));
    Q_EMIT rows_changed();
    replay();
}

std::vector<BatchBenchRow> BatchingLab::rows() const {
    std::vector<BatchBenchRow> sorted;
    for (const auto& [batch, row] : rows_) sorted.push_back(row);
    return sorted;
}

QString BatchingLab::noisy_points_text() const {
    QStringList noisy;
    for (const auto& [batch, row] : rows_) {
        const SampleStats stats = stats_of(row.decode_tokens_per_s, row.decode_tokens_per_s_stddev);
        if (stats.noisy()) noisy << tr("B = %1 (\u00b1%2 %)").arg(batch).arg(100.0 * stats.relative_spread(), 0, 'f', 0);
    }
    if (noisy.isEmpty()) return QString();
    return tr(" Noisy, spread over %1 % of the mean: %2; measure again, or with more repeats.")
        .arg(noisy_percent())
        .arg(noisy.join(QStringLiteral(", ")));
}

int BatchingLab::knee_batch() const { return find_knee(rows(), kBenchDefaults.knee_gain); }

QString BatchingLab::knee_text() const {
    const int knee = knee_batch();
    if (knee == 0) {
        return rows_.size() < 2 ? tr("Move the slider or sweep to measure the curve.")
                                : tr("No knee among the measured sizes: every doubling of B still gained at least %1 % "
                                     "throughput (decode is still memory-bound).")
                                      .arg(kBenchDefaults.knee_gain * 100, 0, 'f', 0);
    }
    return tr("Knee at B = %1: doubling the batch beyond it gains less than %2 % throughput while every request's step "
              "keeps getting slower (the step has turned compute-bound).")
        .arg(knee)
        .arg(kBenchDefaults.knee_gain * 100, 0, 'f', 0);
}

TraceOptions BatchingLab::trace_options() const {
    TraceOptions trace;
    trace.requests = requests_->value();
    trace.median_output_tokens = median_tokens_->value();
    trace.max_output_tokens = max_tokens_->value();  // below the median: the replay reports it
    return trace;
}

int BatchingLab::replay_slots() const { return slots_->value(); }

void BatchingLab::set_trace(int requests, int median_output_tokens, int max_output_tokens, int slot_count) {
    requests_->setValue(requests);
    median_tokens_->setValue(median_output_tokens);
    max_tokens_->setValue(max_output_tokens);
    slots_->setValue(slot_count);
}

void BatchingLab::trace_changed() {
    // A real run of another trace would sit beside this one's simulation.
    if (controller_.lab_job_running(kRealReplayJob)) controller_.cancel_lab_job(kRealReplayJob);
    replay_->clear_real_result();
    replay();
}

void BatchingLab::replay_for_real() {
    const TraceOptions trace = trace_options();
    const int slot_count = replay_slots();
    progress_->setValue(0);
    status_->setText(tr("Serving %1 requests for real through %2 slots\u2026").arg(trace.requests).arg(slot_count));
    auto* job = controller_.run_lab_job(kRealReplayJob, [trace, slot_count](const LabContext& context) {
        return replay_trace_for_real(context, trace, slot_count);
    });
    job->on_finished(this, [this](const ReplayResult& result) {
        replay_->set_real_result(result);
        status_->setText(tr("Served the trace for real on the loaded model: dashed curves."));
        Q_EMIT replay_changed();
    });
    watch(*job);
}

void BatchingLab::replay() {
    if (rows_.empty()) return;
    const std::vector<BatchBenchRow> measured = rows();
    const TraceOptions trace = trace_options();
    const int slot_count = replay_slots();
    auto* job = controller_.run_lab_job(kReplayJob, [measured, trace, slot_count](const LabContext& context) {
        context.throw_if_cancelled();
        return replay_trace(cost_model_from_batch_rows(measured), trace, slot_count);
    });
    job->on_finished(this, [this](const ReplayResult& result) {
        replay_->set_result(result);
        Q_EMIT replay_changed();
    });
    watch(*job);
}

QList<ChartPanel*> BatchingLab::panels() const { return {throughput_, step_, replay_}; }

}  // namespace inferscope::ui
