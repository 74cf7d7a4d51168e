#include "ui/labs/quantization_lab.h"

#include <QComboBox>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QProgressBar>
#include <QPushButton>
#include <QSlider>
#include <QTableWidget>
#include <QVBoxLayout>

#include "engine/formats/ggml_type.h"
#include "ui/engine_controller.h"
#include "ui/flow_layout.h"
#include "ui/labs/lab_progress.h"
#include "ui/labs/scheme_fit.h"
#include "ui/panels/quant_panels.h"
#include "ui/wrapping_label.h"
#include "ui/number_format.h"

namespace inferscope::ui {
namespace {

constexpr int kDefaultBits = 4;
const QString kScoringText = QStringLiteral(":/inferscope/quality/scoring-text.txt");
const QString kBattery = QStringLiteral(":/inferscope/quality/battery-default.txt");
// Above this size the battery's greedy decodes (16 prompts x 16 tokens, on both models) take
// minutes on a CPU, so quality rows then score the text only.
constexpr qint64 kBatteryMaxParameters = 2'000'000'000;

QString read_resource(const QString& path) {
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) return {};
    return QString::fromUtf8(file.readAll());
}

QComboBox* combo(const QList<std::pair<QString, QString>>& items, int current) {
    auto* box = new QComboBox();
    for (const auto& [label, value] : items) box->addItem(label, value);
    box->setCurrentIndex(current);
    return box;
}

QString battery_text(const std::optional<BatteryResult>& result) {
    return result ? QStringLiteral("%1/%2").arg(result->passed).arg(result->total) : QStringLiteral("-");
}

}  // namespace

QuantizationLab::QuantizationLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      status_(new QLabel(tr("Moving a control re-quantizes the loaded model's projection matrices in memory and charts "
                            "each matrix's relative error."))),
      error_panel_(new QuantErrorPanel()),
      table_(new QTableWidget(0, 8)),
      quality_panel_(new QuantQualityPanel()) {
    setObjectName(QStringLiteral("quantization"));
    quality_settings_.text_name = "scoring-text.txt";
    quality_settings_.text = read_resource(kScoringText).toStdString();
    quality_settings_.battery = parse_battery(read_resource(kBattery).toStdString(), "battery-default.txt");
    wrap_within_column(status_);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(build_scheme_controls());
    layout->addWidget(status_);
    layout->addWidget(error_panel_, 3);
    layout->addWidget(build_quality_controls());
    auto* results = new QHBoxLayout();
    results->addWidget(table_, 3);
    results->addWidget(quality_panel_, 2);
    layout->addLayout(results, 2);
    debounce_.setSingleShot(true);
    debounce_.setInterval(kDebounceMs);
    connect(&debounce_, &QTimer::timeout, this, [this] {
        if (isVisible() && !analysis_is_current()) run_now();
    });
    connect_controls();
    connect_controller();
    if (controller_.has_model()) set_model(controller_.model());
    update_enabled();
}

QWidget* QuantizationLab::build_scheme_controls() {
    format_ = combo({{tr("INT (absmax)"), QStringLiteral("int")},
                     {tr("NF4"), QStringLiteral("nf4")},
                     {tr("Q8_0 (GGUF)"), QStringLiteral("q8_0")},
                     {tr("Q4_0 (GGUF)"), QStringLiteral("q4_0")},
                     {tr("Q4_K (GGUF)"), QStringLiteral("q4_k")},
                     {tr("Q6_K (GGUF)"), QStringLiteral("q6_k")},
                     {tr("IQ4_NL (GGUF)"), QStringLiteral("iq4_nl")},
                     {tr("IQ4_XS (GGUF)"), QStringLiteral("iq4_xs")}},
                    0);
    bits_slider_ = new QSlider(Qt::Horizontal);
    bits_slider_->setRange(2, 8);
    bits_slider_->setValue(kDefaultBits);
    bits_slider_->setPageStep(1);
    bits_label_ = new QLabel(tr("%1 bits").arg(kDefaultBits));
    granularity_ = combo({{tr("per tensor"), QStringLiteral("tensor")},
                          {tr("per row"), QStringLiteral("row")},
                          {tr("per group"), QStringLiteral("group")}},
                         1);  // per row fits every shape; groups must divide the rows (stories260K's FFN is 172 wide)
    group_size_ = combo({{tr("32"), QStringLiteral("32")}, {tr("64"), QStringLiteral("64")}, {tr("128"), QStringLiteral("128")}},
                        2);
    group_size_->setToolTip(tr("Weights per group (INT per group) or per block (NF4)"));
    order_ = combo({{tr("file order"), QStringLiteral("file")}, {tr("by error"), QStringLiteral("error")}}, 0);
    progress_ = new QProgressBar();
    progress_->setRange(0, 1000);
    progress_->setMaximumWidth(180);
    progress_->hide();
    cancel_ = new QPushButton(tr("Cancel"));
    bits_slider_->setMinimumWidth(140);
    auto* box = new QWidget();
    auto* row = new FlowLayout(box);
    row->setContentsMargins(0, 0, 0, 0);
    row->addWidget(labelled_field(tr("&Format:"), format_));
    row->addWidget(labelled_field(tr("&Bits:"), bits_slider_, bits_label_));
    row->addWidget(labelled_field(tr("&Granularity:"), granularity_));
    row->addWidget(labelled_field(tr("Group si&ze:"), group_size_));
    row->addWidget(labelled_field(tr("&Sort:"), order_));
    row->addWidget(progress_);
    row->addWidget(cancel_);
    return box;
}

QWidget* QuantizationLab::build_quality_controls() {
    measure_ = new QPushButton(tr("&Measure quality"));
    measure_->setToolTip(tr("Quantize with the current scheme and score it against the unquantized model"));
    use_weights_ = new QPushButton(tr("Generate with &these weights"));
    use_weights_->setToolTip(tr("The main generation runs the model quantized with the current scheme"));
    restore_ = new QPushButton(tr("&Restore original weights"));
    text_note_ = new QLabel(tr("Quality is scored on a bundled story text (%1, at most %2 chunks of %3 tokens; perplexity "
                               "as llama-perplexity scores it, on the second half of each chunk; KL and top-1 against the "
                               "unquantized model at the same positions) and, for models up to 2 B parameters, the "
                               "16-prompt battery decoded greedily on both models.")
                                .arg(QString::fromStdString(quality_settings_.text_name))
                                .arg(quality_settings_.max_chunks)
                                .arg(quality_settings_.n_ctx));
    wrap_within_column(text_note_);
    table_->setHorizontalHeaderLabels({tr("scheme"), tr("bits/weight"), tr("size (MiB)"), tr("PPL"), tr("ΔPPL"),
                                       tr("KL (nats/token)"), tr("top-1 agreement"), tr("battery (unquantized)")});
    table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* box = new QWidget();
    auto* layout = new QVBoxLayout(box);
    layout->setContentsMargins(0, 0, 0, 0);
    auto* row = new FlowLayout();
    row->addWidget(measure_);
    row->addWidget(use_weights_);
    row->addWidget(restore_);
    layout->addLayout(row);
    layout->addWidget(text_note_);
    return box;
}

void QuantizationLab::connect_controls() {
    connect(bits_slider_, &QSlider::valueChanged, this, [this](int bits) {
        bits_label_->setText(tr("%1 bits").arg(bits));
        schedule_analysis();
    });
    for (QComboBox* box : {format_, granularity_, group_size_}) {
        connect(box, &QComboBox::currentIndexChanged, this, [this] {
            update_enabled();
            schedule_analysis();
        });
    }
    connect(order_, &QComboBox::currentIndexChanged, this, [this] {
        error_panel_->set_order(order_->currentData().toString() == QLatin1String("error") ? QuantErrorPanel::Order::ByError
                                                                                           : QuantErrorPanel::Order::File);
    });
    connect(cancel_, &QPushButton::clicked, this, &QuantizationLab::cancel);
    connect(measure_, &QPushButton::clicked, this, &QuantizationLab::measure_quality);
    connect(use_weights_, &QPushButton::clicked, this, &QuantizationLab::use_quantized_weights);
    connect(restore_, &QPushButton::clicked, this, &QuantizationLab::restore_weights);
}

QString QuantizationLab::scheme_text() const {
    const QString format = format_->currentData().toString();
    const QString group = group_size_->currentData().toString();
    if (format == QLatin1String("nf4")) return QStringLiteral("nf4:%1").arg(group);
    if (format != QLatin1String("int")) return format;
    const QString granularity = granularity_->currentData().toString();
    const QString shape = granularity == QLatin1String("group") ? QStringLiteral("g") + group : granularity;
    return QStringLiteral("int%1:%2").arg(bits_slider_->value()).arg(shape);
}

bool QuantizationLab::analysis_is_current() const {
    // Canonical names: "nf4:64" is spelled "nf4".
    const std::string current = parse_quant_scheme(scheme_text().toStdString()).name();
    return report_ && !report_->schemes.empty() && report_->schemes.front().scheme.name() == current;
}

void QuantizationLab::schedule_analysis() { debounce_.start(); }

void QuantizationLab::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!analysis_is_current()) debounce_.start();
}

void QuantizationLab::run_now() {
    debounce_.stop();
    if (!controller_.has_model()) return;
    running_scheme_ = scheme_text();
    const QuantScheme scheme = parse_quant_scheme(running_scheme_.toStdString());
    status_->setText(tr("Quantizing with %1…").arg(running_scheme_));
    auto* job = controller_.run_lab_job(kAnalysisJob,
                                        [scheme](const LabContext& context) { return measure_quant_errors(context, scheme); });
    analysis_job_ = job->id();
    job->on_finished(this, [this](const QuantReport& report) { show_report(report); });
    watch(*job);
}

void QuantizationLab::measure_quality() {
    if (!controller_.has_model()) return;
    const QuantScheme scheme = parse_quant_scheme(scheme_text().toStdString());
    QualitySettings settings = quality_settings_;
    if (controller_.model().parameters > kBatteryMaxParameters) settings.battery.reset();
    status_->setText(tr("Measuring the quality of %1…").arg(scheme_text()));
    auto* job = controller_.run_lab_job(kQualityJob, [scheme, settings](const LabContext& context) {
        return measure_quant_quality(context, scheme, settings);
    });
    job->on_finished(this, [this](const QualityRow& row) { append_quality_row(row); });
    watch(*job);
}

void QuantizationLab::use_quantized_weights() {
    if (!controller_.has_model()) return;
    weights_scheme_ = scheme_text();
    const QuantScheme scheme = parse_quant_scheme(weights_scheme_.toStdString());
    status_->setText(tr("Quantizing the model with %1 for generation…").arg(weights_scheme_));
    auto* job = controller_.run_lab_job(kWeightsJob,
                                        [scheme](const LabContext& context) { return measure_quantized_model(context, scheme); });
    job->on_finished(this, [this](const QuantizedModel& quantized) { use_weights(quantized); });
    watch(*job);
}

void QuantizationLab::restore_weights() {
    controller_.use_weights(nullptr, QString());
    status_->setText(tr("Generation runs the file's own weights again."));
}

void QuantizationLab::cancel() {
    for (const QString& kind : {kAnalysisJob, kQualityJob, kWeightsJob}) controller_.cancel_lab_job(kind);
}

void QuantizationLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, &QuantizationLab::set_model);
}

void QuantizationLab::watch(LabJobWatcher& job) {
    show_lab_progress(job, *progress_);
    // Connected after the job's result slot, so the buttons see the result in.
    connect(&job, &LabJobWatcher::finished, this, [this] { on_job_ended(QString()); });
    connect(&job, &LabJobWatcher::failed, this, [this](const QString& message) { on_job_ended(tr("Failed: %1").arg(message)); });
    connect(&job, &LabJobWatcher::cancelled, this, [this] { on_job_ended(tr("Cancelled.")); });
    update_enabled();
}

void QuantizationLab::fit_choices_to(const ModelSummary& model) {
    const QList<int> lengths = matrix_row_lengths(model);
    bool any_group_fits = false;
    for (int i = 0; i < group_size_->count(); ++i) {
        const QString misfit = block_misfit(group_size_->itemData(i).toInt(), lengths);
        set_item_enabled(*group_size_, i, misfit);
        any_group_fits = any_group_fits || misfit.isEmpty();
    }
    const QString no_group = any_group_fits ? QString() : tr("No group size fits this model's rows.");
    set_item_enabled(*granularity_, granularity_->findData(QStringLiteral("group")), no_group);
    for (int i = 0; i < format_->count(); ++i) {
        const QString format = format_->itemData(i).toString();
        if (format == QLatin1String("int")) continue;
        if (format == QLatin1String("nf4")) {
            set_item_enabled(*format_, i, no_group);
            continue;
        }
        set_item_enabled(*format_, i, scheme_misfit(format, lengths));
    }
    select_last_enabled(*group_size_);
    select_last_enabled(*granularity_);
    if (!item_enabled(*format_, format_->currentIndex())) format_->setCurrentIndex(format_->findData(QStringLiteral("int")));
}

void QuantizationLab::set_model(const ModelSummary& model) {
    fit_choices_to(model);
    update_enabled();
    // A new thread count or weight swap keeps the file: its results stay valid.
    const QString identity = model.path + QLatin1Char('#') + model.fingerprint;
    if (identity == model_identity_ && report_) return;
    model_identity_ = identity;
    report_.reset();
    error_panel_->clear();
    quality_rows_.clear();
    table_->setRowCount(0);
    quality_panel_->set_rows(quality_rows_);
    schedule_analysis();
}

void QuantizationLab::show_report(const QuantReport& report) {
    report_ = report;
    error_panel_->set_report(report);
    status_->setText(tr("%1: %2 matrices quantized in %3 s on %4 threads.")
                         .arg(running_scheme_)
                         .arg(report.matrices.size())
                         .arg(report.seconds, 0, 'f', 2)
                         .arg(report.n_threads));
    Q_EMIT report_changed();
}

void QuantizationLab::use_weights(const QuantizedModel& quantized) {
    const SchemeSummary& summary = quantized.report.schemes.front();
    const std::string_view type = ggml_type_name(summary.execution_type);
    const QString execution_name = QString::fromUtf8(type.data(), static_cast<qsizetype>(type.size()));
    controller_.use_weights(quantized.model, tr("quantized in memory with %1 (%2 bits/weight, %3 MiB; executes as %4)")
                                                 .arg(weights_scheme_)
                                                 .arg(summary.bits_per_weight, 0, 'f', 3)
                                                 .arg(bytes_to_mib(summary.model_bytes), 0, 'f', 2)
                                                 .arg(execution_name));
    status_->setText(tr("Generation now runs the weights quantized with %1.").arg(weights_scheme_));
}

void QuantizationLab::on_job_ended(const QString& message) {
    if (!message.isEmpty()) status_->setText(message);
    const bool running = controller_.lab_job_running(kAnalysisJob) || controller_.lab_job_running(kQualityJob) ||
                         controller_.lab_job_running(kWeightsJob);
    progress_->setVisible(running);
    update_enabled();
}

void QuantizationLab::append_quality_row(const QualityRow& row) {
    quality_rows_.push_back(row);
    const int r = table_->rowCount();
    table_->insertRow(r);
    const QStringList cells{QString::fromStdString(row.scheme),
                            QString::number(row.bits_per_weight, 'f', 3),
                            QString::number(bytes_to_mib(row.model_bytes), 'f', 2),
                            QStringLiteral("%1 ± %2").arg(format_number(row.ppl, 5), format_number(row.ppl_stderr, 3)),
                            QStringLiteral("%1 (%2)")
                                .arg(format_number(row.delta_ppl(), 4), format_relative_change(row.ppl, row.reference_ppl)),
                            format_number(row.kl_mean, 5),
                            QString::number(row.top1_agreement, 'f', 4),
                            QStringLiteral("%1 (%2)").arg(battery_text(row.battery), battery_text(row.reference_battery))};
    for (int c = 0; c < cells.size(); ++c) table_->setItem(r, c, new QTableWidgetItem(cells[c]));
    quality_panel_->set_rows(quality_rows_);
    status_->setText(tr("%1 scored on %2 tokens of %3: PPL %4 against %5 unquantized.")
                         .arg(QString::fromStdString(row.scheme))
                         .arg(row.scored_tokens)
                         .arg(QString::fromStdString(quality_settings_.text_name))
                         .arg(format_number(row.ppl, 5), format_number(row.reference_ppl, 5)));
    Q_EMIT quality_rows_changed();
}

void QuantizationLab::update_enabled() {
    const QString format = format_->currentData().toString();
    const bool is_int = format == QLatin1String("int");
    bits_slider_->setEnabled(is_int);
    granularity_->setEnabled(is_int);
    group_size_->setEnabled(format == QLatin1String("nf4") ||
                            (is_int && granularity_->currentData().toString() == QLatin1String("group")));
    const bool model = controller_.has_model();
    measure_->setEnabled(model && !controller_.lab_job_running(kQualityJob));
    use_weights_->setEnabled(model && !controller_.lab_job_running(kWeightsJob));
    restore_->setEnabled(model && !controller_.model().weights.isEmpty());
    cancel_->setEnabled(controller_.lab_job_running(kAnalysisJob) || controller_.lab_job_running(kQualityJob) ||
                        controller_.lab_job_running(kWeightsJob));
}

QList<ChartPanel*> QuantizationLab::panels() const { return {error_panel_, quality_panel_}; }

}  // namespace inferscope::ui
