#include "ui/labs/speculative_lab.h"

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

#include "engine/speculative/spec_table.h"
#include "ui/engine_controller.h"
#include "ui/labs/scheme_fit.h"
#include "ui/labs/lab_progress.h"
#include "ui/labs/repeats.h"
#include "ui/panels/speculative_panel.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

// Item data of the draft box: a file's path, or this entry that opens the file dialog.
constexpr int kDraftFileRole = Qt::UserRole;
const QString kChooseFile = QStringLiteral("choose-file");

constexpr int kDefaultGamma = 4;
constexpr int kDefaultTokens = 64;
constexpr int kMaxTokens = 1024;

QSpinBox* spin_box(int min, int max, int value, const QString& tip) {
    auto* box = new QSpinBox();
    box->setRange(min, max);
    box->setValue(value);
    box->setToolTip(tip);
    return box;
}

}  // namespace

SpeculativeLab::SpeculativeLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      draft_box_(new QComboBox()),
      gamma_box_(spin_box(1, SpeculativePanel::kMaxGamma, kDefaultGamma, tr("Draft tokens proposed per verify pass"))),
      tokens_box_(spin_box(1, kMaxTokens, kDefaultTokens, tr("Tokens to generate, plainly and speculatively"))),
      repeats_box_(make_repeats_box()),
      prompt_edit_(new QLineEdit()),
      measure_button_(new QPushButton(tr("&Measure"))),
      cancel_button_(new QPushButton(tr("Cancel"))),
      progress_(new QProgressBar()),
      status_(new QLabel()),
      results_(new QLabel()),
      panel_(new SpeculativePanel()) {
    // The screenshot of this tab keeps the analytic chart's name.
    setObjectName(QStringLiteral("speculative-speedup"));
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(panel_, 1);
    layout->addWidget(build_controls());
    layout->addWidget(status_);
    layout->addWidget(results_);
    wrap_within_column(status_);
    wrap_within_column(results_);
    results_->setTextFormat(Qt::PlainText);  // model output is not markup
    results_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect_controller();
    if (controller_.has_model()) fit_drafts_to(controller_.model());
    measure_button_->setEnabled(controller_.has_model());
    cancel_button_->setEnabled(false);
}

void SpeculativeLab::fit_drafts_to(const ModelSummary& model) {
    const QList<int> lengths = matrix_row_lengths(model);
    for (int i = 0; i < draft_box_->count(); ++i) {
        if (draft_box_->itemData(i, kDraftFileRole).toString() == kChooseFile) continue;
        set_item_enabled(*draft_box_, i, scheme_misfit(draft_box_->itemText(i), lengths));
    }
    const int current = draft_box_->findText(draft_box_->currentText());
    if (current >= 0 && !item_enabled(*draft_box_, current)) draft_box_->setCurrentIndex(0);  // int4:row fits every shape
}

QWidget* SpeculativeLab::build_controls() {
    draft_box_->setEditable(true);
    draft_box_->setInsertPolicy(QComboBox::NoInsert);
    for (const char* scheme : {"int4:row", "int8:row", "int4:g32", "int3:row", "nf4", "q8_0", "q4_0", "q4_k", "q6_k"}) {
        draft_box_->addItem(QString::fromLatin1(scheme));
    }
    draft_box_->addItem(tr("Second file\u2026"), kChooseFile);
    draft_box_->setToolTip(tr("The draft: the loaded model under a quantization scheme (type any, e.g. int5:g64), or a "
                              "second GGUF file with the same vocabulary. INT and NF4 drafts run as dequantized F32 "
                              "weights, as costly per step as an F32 target; q8_0, q4_0, q4_k and q6_k run as packed "
                              "blocks."));
    connect(draft_box_, &QComboBox::activated, this, [this](int index) {
        if (draft_box_->itemData(index, kDraftFileRole).toString() == kChooseFile) choose_draft_file();
    });
    prompt_edit_->setPlaceholderText(tr("the generation prompt"));
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(220);
    progress_->hide();
    cancel_button_->setToolTip(tr("Stop the running measurement"));
    connect(measure_button_, &QPushButton::clicked, this, &SpeculativeLab::measure);
    connect(cancel_button_, &QPushButton::clicked, this, [this] { controller_.cancel_lab_job(kJob); });

    auto* box = new QWidget();
    auto* form = new QFormLayout(box);
    form->setContentsMargins(8, 0, 8, 0);
    // A row that is a layout gets no buddy from QFormLayout, so each label names its field.
    const auto labelled = [](const QString& text, QWidget* field) {
        auto* label = new QLabel(text);
        label->setBuddy(field);
        return label;
    };
    auto* row = new QHBoxLayout();
    row->addWidget(draft_box_, 1);
    row->addWidget(labelled(tr("&\u03b3:"), gamma_box_));
    row->addWidget(gamma_box_);
    row->addWidget(labelled(tr("T&okens:"), tokens_box_));
    row->addWidget(tokens_box_);
    form->addRow(labelled(tr("&Draft:"), draft_box_), row);
    auto* run_row = new QHBoxLayout();
    run_row->addWidget(prompt_edit_, 1);
    run_row->addWidget(labelled(tr("R&epeats:"), repeats_box_));
    run_row->addWidget(repeats_box_);
    run_row->addWidget(measure_button_);
    run_row->addWidget(cancel_button_);
    run_row->addWidget(progress_);
    form->addRow(labelled(tr("&Prompt:"), prompt_edit_), run_row);
    return box;
}

void SpeculativeLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, [this](const ModelSummary& model) {
        fit_drafts_to(model);
        // A measurement belongs to the model (and threads) it ran on.
        panel_->clear_measurement();
        result_.reset();
        results_->clear();
        status_->setText(tr("Press Measure to run this model against its draft."));
        measure_button_->setEnabled(true);
    });
}

void SpeculativeLab::set_generation_prompt(const QString& prompt) { generation_prompt_ = prompt; }

void SpeculativeLab::set_draft_file(const QString& path) {
    // Before the "Second file…" entry, which stays last.
    const int index = draft_box_->count() - 1;
    draft_box_->insertItem(index, QFileInfo(path).fileName(), path);
    draft_box_->setCurrentIndex(index);
}

void SpeculativeLab::choose_draft_file() {
    const QString path =
        QFileDialog::getOpenFileName(this, tr("Open a draft model"), QString(), tr("GGUF models (*.gguf);;All files (*)"));
    if (path.isEmpty()) {
        draft_box_->setCurrentIndex(0);
        return;
    }
    set_draft_file(path);
}

SpeculativeRunSettings SpeculativeLab::settings() const {
    SpeculativeRunSettings s;
    const int index = draft_box_->currentIndex();
    // An edited box holds a typed scheme, whatever item was current before.
    const bool item_shown = index >= 0 && draft_box_->itemText(index) == draft_box_->currentText();
    const QString path = item_shown ? draft_box_->itemData(index, kDraftFileRole).toString() : QString();
    if (!path.isEmpty() && path != kChooseFile) {
        s.draft_path = path.toStdString();
    } else {
        s.draft_scheme = draft_box_->currentText().trimmed().toStdString();
    }
    const QString prompt = prompt_edit_->text().isEmpty() ? generation_prompt_ : prompt_edit_->text();
    s.prompt = prompt.toStdString();
    s.n_predict = tokens_box_->value();
    s.gamma = gamma_box_->value();
    s.repetitions = repeats_box_->value();
    return s;
}

void SpeculativeLab::measure() {
    const SpeculativeRunSettings s = settings();
    progress_->setValue(0);
    progress_->show();
    measure_button_->setEnabled(false);
    cancel_button_->setEnabled(true);
    status_->setText(tr("Measuring %1 tokens with \u03b3 = %2\u2026").arg(s.n_predict).arg(s.gamma));
    auto* job = controller_.run_lab_job(kJob, [s](const LabContext& context) { return measure_speculative_decoding(context, s); });
    show_lab_progress(*job, *progress_);
    job->on_finished(this, [this](const SpeculativeRunResult& result) {
        end_run(tr("Measured: plain decoding first, then the speculative run on the same target."));
        show_result(result);
    });
    connect(job, &LabJobWatcher::failed, this, [this](const QString& message) { end_run(tr("Measurement failed: %1").arg(message)); });
    connect(job, &LabJobWatcher::cancelled, this, [this] { end_run(tr("Measurement cancelled.")); });
}

void SpeculativeLab::end_run(const QString& status) {
    progress_->hide();
    measure_button_->setEnabled(controller_.has_model());
    cancel_button_->setEnabled(false);
    status_->setText(status);
}

void SpeculativeLab::show_result(const SpeculativeRunResult& result) {
    result_ = result;
    const SpeculativeMeasurement& m = result.measured;
    const SpeculativeStats& s = m.speculative.stats;
    const double alpha = s.acceptance();
    panel_->set_measurement(result.gamma, result.speedup.mean, alpha, m.cost_ratio);
    const QString identical = !m.identical_to_plain ? tr("n/a") : *m.identical_to_plain ? tr("yes") : tr("NO");
    const QString numbers =
        tr("\u03b3 = %1: acceptance \u03b1 = %2 (%3 of %4 proposals), %5 tokens per verify (analytic %6), cost ratio "
           "c = %7 (draft step %8 ms / target step %9 ms), measured speed-up %10 (\u00d7, mean \u00b1 standard "
           "deviation of %11 runs) vs %12\u00d7 analytic; %13 tokens in %14 verify passes, identical to plain greedy decoding: %15. "
           "Draft: %16.")
            .arg(result.gamma)
            .arg(alpha, 0, 'f', 3)
            .arg(s.accepted)
            .arg(s.proposed)
            .arg(s.tokens_per_verify(), 0, 'f', 2)
            .arg(expected_tokens_per_verify(alpha, result.gamma), 0, 'f', 2)
            .arg(m.cost_ratio, 0, 'f', 3)
            .arg(s.draft_ms_per_step(), 0, 'f', 3)
            .arg(m.plain.timings.decode_ms_per_token, 0, 'f', 3)
            .arg(format_mean_spread(result.speedup, 2))
            .arg(result.speedup.count)
            .arg(speculative_speedup(alpha, result.gamma, m.cost_ratio), 0, 'f', 2)
            .arg(s.n_generated)
            .arg(s.verify_passes)
            .arg(identical)
            .arg(QString::fromStdString(result.draft_label));  // last: a path may hold '%'
    results_->setText(numbers + speedup_warning(result) + tr("\n\nOutput after the prompt:\n") +
                      QString::fromStdString(result.text));
    Q_EMIT result_changed();
}

QString SpeculativeLab::speedup_warning(const SpeculativeRunResult& result) {
    // Each verify pass costs at least one plain step, so the speed-up cannot pass the tokens a pass yields.
    const double bound = result.measured.speculative.stats.tokens_per_verify();
    if (bound > 0 && result.speedup.mean > bound) {
        return tr("\nImpossible result: a speed-up of %1\u00d7 is above the %2 tokens per verify pass that bound it; "
                  "something slowed the plain run. Measure again.")
            .arg(result.speedup.mean, 0, 'f', 2)
            .arg(bound, 0, 'f', 2);
    }
    if (result.speedup.noisy()) {
        return tr("\nNoisy result: the runs' speed-ups spread over %1 % of their mean (more than %2 %). Measure again, "
                  "or with more repeats.")
            .arg(100.0 * result.speedup.relative_spread(), 0, 'f', 0)
            .arg(noisy_percent());
    }
    return QString();
}

QList<ChartPanel*> SpeculativeLab::panels() const { return {panel_}; }

}  // namespace inferscope::ui
