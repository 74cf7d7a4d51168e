#include "ui/labs/phases_lab.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/engine_controller.h"
#include "ui/labs/lab_progress.h"
#include "ui/labs/lab_measurements.h"
#include "ui/panels/phases_chart_panel.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {

PhasesLab::PhasesLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      measure_button_(new QPushButton(tr("&Measure prefill and decode"))),
      cancel_button_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar()),
      status_(new QLabel()),
      table_(new QTableWidget()),
      chart_(new PhasesChartPanel()) {
    setObjectName(QStringLiteral("prefill-vs-decode"));
    progress_->setRange(0, 1000);
    progress_->hide();
    wrap_within_column(status_);
    table_->setColumnCount(5);
    table_->setHorizontalHeaderLabels({tr("tokens"), tr("prefill total (ms)"), tr("prefill (ms/token)"),
                                       tr("decode step (ms)"), tr("decode (tokens/s)")});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* row = new QHBoxLayout();
    row->addWidget(measure_button_);
    row->addWidget(cancel_button_);
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
    follow_lab_progress(controller_, this, *progress_, [](const QString& kind) { return kind == kJob; });
    connect(&controller_, &EngineController::lab_job_finished, this, [this](const QString& kind, quint64, const std::any& result) {
        if (kind != kJob) return;
        end_run();
        show_report(std::any_cast<const PhasesReport&>(result));
    });
    connect(&controller_, &EngineController::lab_job_failed, this, [this](const QString& kind, quint64, const QString& message) {
        if (kind != kJob) return;
        end_run();
        status_->setText(tr("Measurement failed: %1").arg(message));
    });
    connect(&controller_, &EngineController::lab_job_cancelled, this, [this](const QString& kind, quint64) {
        if (kind != kJob) return;
        end_run();
        status_->setText(tr("Measurement cancelled."));
    });
}

void PhasesLab::end_run() {
    progress_->hide();
    cancel_button_->setEnabled(false);
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
    const PhasesOptions options = options_fitting(controller_.model().context_length);
    progress_->setValue(0);
    progress_->show();
    cancel_button_->setEnabled(true);
    status_->setText(tr("Measuring %1 prompt lengths and %1 cache lengths, %2 timed runs each…")
                         .arg(options.prompt_lengths.size())
                         .arg(options.repetitions));
    controller_.run_lab_job({kJob, [options](const LabContext& context) -> std::any {
                                 return measure_phases_stepwise(context, options);
                             }});
}

void PhasesLab::show_report(const PhasesReport& report) {
    report_ = report;
    chart_->set_report(report);
    const int rows = static_cast<int>(std::max(report.prefill.size(), report.decode.size()));
    table_->setRowCount(rows);
    const auto cell = [this](int row, int column, double value, int decimals) {
        table_->setItem(row, column, new QTableWidgetItem(QString::number(value, 'f', decimals)));
    };
    for (int i = 0; i < rows; ++i) {
        const auto index = static_cast<size_t>(i);
        table_->setItem(i, 0, new QTableWidgetItem(QString()));
        QStringList tokens;
        if (index < report.prefill.size()) {
            tokens << tr("prompt %1").arg(report.prefill[index].n_prompt);
            cell(i, 1, report.prefill[index].total_ms, 2);
            cell(i, 2, report.prefill[index].ms_per_token, 3);
        }
        if (index < report.decode.size()) {
            tokens << tr("cache %1").arg(report.decode[index].context);
            cell(i, 3, report.decode[index].step_ms, 3);
            cell(i, 4, report.decode[index].tokens_per_s, 1);
        }
        table_->item(i, 0)->setText(tokens.join(QStringLiteral(", ")));
    }
    status_->setText(tr("Prefill pushes the whole prompt through each weight read, so a prompt token costs a fraction "
                        "of a decode step; decode steps grow with the cache they attend over."));
    emit report_changed();
}

QList<ChartPanel*> PhasesLab::panels() const { return {chart_}; }

}  // namespace inferscope::ui
