#include "ui/labs/outliers_lab.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSlider>
#include <QTableWidget>
#include <QVBoxLayout>

#include "ui/engine_controller.h"
#include "ui/labs/lab_measurements.h"
#include "ui/labs/prompt_follower.h"
#include "ui/panels/outlier_panels.h"
#include "ui/wrapping_label.h"
#include "ui/number_format.h"

namespace inferscope::ui {
namespace {

QString text_of(std::string_view s) { return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size())); }

}  // namespace

OutliersLab::OutliersLab(EngineController& controller, QWidget* parent)
    : QWidget(parent),
      controller_(controller),
      layer_slider_(new QSlider(Qt::Horizontal)),
      layer_label_(new QLabel()),
      status_(new QLabel(tr("Type a prompt in the generation panel: its activations are analysed as you type."))),
      int8_summary_(new QLabel()),
      int8_table_(new QTableWidget()),
      histogram_(new OutlierHistogramPanel()),
      maxima_(new OutlierMaximaPanel()),
      heat_strip_(new OutlierHeatStripPanel()),
      follower_(new PromptFollower(*this, controller, kJob, kDebounceMs,
                                   {[this] { return report_is_current(); },
                                    [this](const std::string& prompt) { start_job(prompt); }})) {
    setObjectName(QStringLiteral("activation-outliers"));
    layer_slider_->setRange(0, 0);
    wrap_within_column(status_);
    wrap_within_column(int8_summary_);
    setup_int8_table();
    int8_table_->verticalHeader()->hide();
    int8_table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    auto* row = new QHBoxLayout();
    auto* slider_label = new QLabel(tr("&Layer:"));
    slider_label->setBuddy(layer_slider_);
    row->addWidget(slider_label);
    row->addWidget(layer_slider_, 1);
    row->addWidget(layer_label_);
    auto* charts = new QHBoxLayout();
    charts->addWidget(histogram_);
    charts->addWidget(maxima_);
    auto* layout = new QVBoxLayout(this);
    layout->addLayout(row);
    layout->addWidget(status_);
    layout->addLayout(charts, 2);
    auto* int8 = new QVBoxLayout();
    int8->addWidget(int8_summary_);
    int8->addWidget(int8_table_, 1);
    auto* lower = new QHBoxLayout();
    lower->addWidget(heat_strip_, 1);
    lower->addLayout(int8, 1);
    layout->addLayout(lower, 2);
    connect(layer_slider_, &QSlider::valueChanged, this, [this](int layer) {
        layer_label_->setText(tr("block %1").arg(layer));
        show_layer(layer);          // the per-layer charts are already measured
        follower_->schedule();      // the INT8 table needs that layer captured whole
    });
    connect_controller();
    if (controller_.has_model()) set_model(controller_.model());
}

void OutliersLab::setup_int8_table() {
    // Short headers sized to their text (a stretched column cuts them), the long name in the tooltip.
    const QList<QPair<QString, QString>> columns = {
        {tr("INT8 scheme"), tr("Where the INT8 scale is shared")},
        {tr("rel. error (%)"), tr("Relative error ||x - x_hat|| / ||x|| of the activations, in percent")},
        {tr("max |error|"), tr("Largest absolute error of one activation")},
        {tr("levels used"), tr("Median number of the 255 INT8 levels a row's values fall on")}};
    int8_table_->setColumnCount(static_cast<int>(columns.size()));
    for (int c = 0; c < columns.size(); ++c) {
        auto* header = new QTableWidgetItem(columns[c].first);
        header->setToolTip(columns[c].second);
        int8_table_->setHorizontalHeaderItem(c, header);
    }
    int8_table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    int8_table_->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

void OutliersLab::set_model(const ModelSummary& model) {
    report_.reset();
    // The charts and figures of the previous model go at once, not when the new analysis lands.
    const QString waiting = tr("Analysing the prompt on the new model…");
    histogram_->clear(waiting);
    maxima_->clear(waiting);
    heat_strip_->clear(waiting);
    int8_summary_->clear();
    int8_table_->setRowCount(0);
    layer_slider_->setRange(0, std::max(0, model.config.n_layer - 1));
    layer_slider_->setValue(model.config.n_layer / 2);
    layer_label_->setText(tr("block %1").arg(layer_slider_->value()));
    follower_->schedule();
}

void OutliersLab::connect_controller() {
    connect(&controller_, &EngineController::model_loaded, this, &OutliersLab::set_model);
    connect(follower_, &PromptFollower::failed, this,
            [this](const QString& message) { status_->setText(tr("Analysis failed: %1").arg(message)); });
}

void OutliersLab::show_report(const OutlierReport& report) {
    report_ = report;
    status_->setText(tr("%1 tokens analysed; top %2 dimensions per layer.").arg(report_->n_tokens).arg(report_->top_k));
    show_layer(layer_slider_->value());
    show_int8(*report_);
    heat_strip_->set_layers(report_->layers, QString::fromStdString(report_->tensor));
    Q_EMIT report_changed();
}

void OutliersLab::start_job(const std::string& prompt) {
    auto* job = controller_.run_lab_job(kJob, [prompt, options = analysis_options()](const LabContext& context) {
        return measure_outliers(context, prompt, options);
    });
    follower_->track(*job);
    job->on_finished(this, [this](const OutlierReport& report) { show_report(report); });
}

const QString& OutliersLab::analysed_prompt() const { return follower_->analysed_prompt(); }

OutlierAnalysisOptions OutliersLab::analysis_options() const {
    OutlierAnalysisOptions options;
    options.top_k = kTopDimensions;
    options.int8_layer = layer_slider_->value();
    return options;
}

bool OutliersLab::report_is_current() const {
    return report_ && follower_->prompt_is_analysed() && report_->int8_layer == layer_slider_->value();
}

void OutliersLab::set_prompt(const QString& prompt) { follower_->set_prompt(prompt); }

void OutliersLab::run_now() { follower_->run_now(); }

void OutliersLab::show_layer(int layer) {
    if (!report_ || layer < 0 || layer >= static_cast<int>(report_->layers.size())) return;
    const QString tensor = QString::fromStdString(report_->tensor);
    histogram_->set_layer(report_->layers[static_cast<size_t>(layer)], tensor);
    maxima_->set_layer(report_->layers[static_cast<size_t>(layer)], tensor);
}

void OutliersLab::show_int8(const OutlierReport& report) {
    const Int8Analysis& a = report.int8;
    int8_summary_->setText(tr("Layer %1, %2 tokens \u00d7 %3 dimensions: max |h| %4 gives a tensor-wide scale of %5; "
                              "without the top %6 dimensions the scale is %7 (%8\u00d7 finer).")
                               .arg(report.int8_layer)
                               .arg(a.n_tokens)
                               .arg(a.n_dims)
                               .arg(format_number(a.tensor_max_abs, 4))
                               .arg(format_number(a.tensor_scale, 4))
                               .arg(a.excluded_dims.size())
                               .arg(format_number(a.reduced_scale, 4))
                               .arg(a.scale_shrink_ratio, 0, 'f', 1));
    int8_table_->setRowCount(static_cast<int>(a.schemes.size()));
    for (int i = 0; i < static_cast<int>(a.schemes.size()); ++i) {
        const Int8SchemeResult& s = a.schemes[static_cast<size_t>(i)];
        const QStringList cells{text_of(int8_scheme_name(s.scheme)), QString::number(100.0 * s.relative_error, 'f', 3),
                                format_number(s.max_abs_error, 4), QString::number(s.median_levels_used, 'f', 1)};
        for (int c = 0; c < cells.size(); ++c) int8_table_->setItem(i, c, new QTableWidgetItem(cells[c]));
    }
}

QList<ChartPanel*> OutliersLab::panels() const { return {histogram_, maxima_, heat_strip_}; }

}  // namespace inferscope::ui
