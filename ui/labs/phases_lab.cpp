#include "ui/labs/phases_lab.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/engine_controller.h"
#include "ui/labs/lab_progress.h"
#include "ui/flow_layout.h"
#include "ui/labs/lab_measurements.h"
#include "ui/labs/repeats.h"
#include "ui/panels/phases_chart_panel.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {

PhasesLab::PhasesLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      measure_button_(new QPushButton(tr("&Measure prefill and decode"))),
      cancel_button_(new QPushButton(tr("Cancel"))),
      repeats_(make_repeats_box()),
      progress_(new QProgressBar()),
      status_(new QLabel()),
      table_(new QTableWidget()),
      chart_(new PhasesChartPanel()) {
    setObjectName(QStringLiteral("prefill-vs-decode"));
    progress_->setRange(0, 1000);
    progress_->hide();
    wrap_within_column(status_);
    table_->setColumnCount(6);
    table_->setHorizontalHeaderLabels({tr("tokens"), tr("prefill total (ms)"), tr("prefill (ms/token)"),
                                       tr("prefill (tokens/s)"), tr("decode step (ms)"), tr("decode (tokens/s)")});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* row = new QHBoxLayout();
    row->addWidget(measure_button_);
    row->addWidget(cancel_button_);
    QWidget* repeats = labelled_field(tr("R&epeats:"), repeats_);
    repeats->setSizePolicy(QSizePolicy::Fixed, QSizePolicy::Preferred);
    row->addWidget(repeats);
    row->addWidget(progress_);
    row->addStretch();
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(chart_);
    splitter->addWidget(table_);
    splitter->setStretchFactor(0, 2);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(status_);
    layout->addWidget(splitter, 1);
    measure_button_->setEnabled(controller_.has_model());
    cancel_button_->setEnabled(false);
    connect(measure_button_, &QPushButton::clicked, this, &PhasesLab::measure);
    connect(cancel_button_, &QPushButton::clicked, this, [this] { controller_.cancel_lab_job(kJob); });
    connect_controller();
}

void PhasesLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, [this] {
        // A measurement belongs to the model (and threads) it ran on.
        report_ = PhasesReport{};
        chart_->set_report(report_);
        table_->setRowCount(0);
        status_->setText(tr("Press Measure to time this model's prefill and decode."));
        measure_button_->setEnabled(true);
    });
}

void PhasesLab::end_run() {
    progress_->hide();
    cancel_button_->setEnabled(false);
}

void PhasesLab::set_options(const PhasesOptions& options) {
    options_ = options;
    repeats_->setValue(options.repetitions);
}

PhasesOptions PhasesLab::options_fitting(int context_tokens) const {
    PhasesOptions fitting = options_;
    fitting.prompt_lengths.clear();
    fitting.context_lengths.clear();
    const size_t pairs = std::min(options_.prompt_lengths.size(), options_.context_lengths.size());
    for (size_t i = 0; i < pairs; ++i) {
        if (options_.prompt_lengths[i] > context_tokens || options_.context_lengths[i] + options_.decode_steps > context_tokens) {
            continue;
        }
        fitting.prompt_lengths.push_back(options_.prompt_lengths[i]);
        fitting.context_lengths.push_back(options_.context_lengths[i]);
    }
    return fitting;
}

void PhasesLab::measure() {
    // Lengths beyond the model's context are left out rather than failing the whole run.
    options_.repetitions = repeats_->value();
    const PhasesOptions options = options_fitting(controller_.model().config.context_length);
    progress_->setValue(0);
    progress_->show();
    cancel_button_->setEnabled(true);
    status_->setText(tr("Measuring %1 prompt lengths and %1 cache lengths, %2 timed runs each…")
                         .arg(options.prompt_lengths.size())
                         .arg(options.repetitions));
    repetitions_ = options.repetitions;
    auto* job = controller_.run_lab_job(kJob, [options](const LabContext& context) {
        return measure_prefill_and_decode(context, options);
    });
    show_lab_progress(*job, *progress_);
    job->on_finished(this, [this](const PhasesReport& report) {
        end_run();
        show_report(report);
    });
    connect(job, &LabJobWatcher::failed, this, [this](const QString& message) {
        end_run();
        status_->setText(tr("Measurement failed: %1").arg(message));
    });
    connect(job, &LabJobWatcher::cancelled, this, [this] {
        end_run();
        status_->setText(tr("Measurement cancelled."));
    });
}

void PhasesLab::show_report(const PhasesReport& report) {
    report_ = report;
    chart_->set_report(report);
    const int rows = static_cast<int>(std::max(report.prefill.size(), report.decode.size()));
    table_->setRowCount(rows);
    int noisy = 0;
    const auto cell = [this](int row, int column, double value, int decimals) {
        table_->setItem(row, column, new QTableWidgetItem(QString::number(value, 'f', decimals)));
    };
    for (int i = 0; i < rows; ++i) {
        const auto index = static_cast<size_t>(i);
        table_->setItem(i, 0, new QTableWidgetItem(QString()));
        QStringList tokens;
        if (index < report.prefill.size()) {
            const PrefillRow& prefill = report.prefill[index];
            tokens << tr("prompt %1").arg(prefill.n_prompt);
            cell(i, 1, prefill.total_ms, 2);
            cell(i, 2, prefill.ms_per_token, 3);
            const SampleStats speed = stats_of(prefill.tokens_per_s, prefill.tokens_per_s_stddev);
            table_->setItem(i, 3, new QTableWidgetItem(format_mean_spread(speed, 1)));
            noisy += speed.noisy() ? 1 : 0;
        }
        if (index < report.decode.size()) {
            const DecodeRow& decode = report.decode[index];
            tokens << tr("cache %1").arg(decode.context);
            cell(i, 4, decode.step_ms, 3);
            const SampleStats speed = stats_of(decode.tokens_per_s, decode.tokens_per_s_stddev);
            table_->setItem(i, 5, new QTableWidgetItem(format_mean_spread(speed, 1)));
            noisy += speed.noisy() ? 1 : 0;
        }
        table_->item(i, 0)->setText(tokens.join(QStringLiteral(", ")));
    }
    QString lesson = tr("Prefill pushes the whole prompt through each weight read, so a prompt token costs a fraction "
                        "of a decode step; decode steps grow with the cache they attend over. Speeds: mean ± standard "
                        "deviation of %n timed run(s).", nullptr, repetitions_);
    if (noisy > 0) {
        lesson += tr(" %n result(s) spread over %1 % of the mean: something else was using the machine; measure "
                     "again, or with more repeats.", nullptr, noisy)
                      .arg(noisy_percent());
    }
    status_->setText(lesson);
    Q_EMIT report_changed();
}

QList<ChartPanel*> PhasesLab::panels() const { return {chart_}; }

}  // namespace inferscope::ui
