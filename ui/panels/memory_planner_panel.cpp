#include "ui/panels/memory_planner_panel.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineSeries>
#include <QPen>
#include <QPushButton>
#include <QScatterSeries>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>
#include <QValueAxis>
#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "ui/wrapping_label.h"

namespace inferscope::ui {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kCustomMemory = -1.0;  // the memory combo's data for "Custom"
const double kMemoryPresetsGiB[] = {8, 16, 24, 80};
constexpr double kExampleMemoryGiB = 8;
constexpr const char* kExampleModel = "13b";
constexpr const char* kExampleWeights = "int4";

QComboBox* make_combo(const QStringList& items, const QString& tip) {
    auto* combo = new QComboBox();
    for (const QString& item : items) combo->addItem(item, item);
    combo->setToolTip(tip);
    return combo;
}

QString preset_label(const BudgetModel& m) {
    return QStringLiteral("%1 (%2 layers \u00d7 %3 KV heads \u00d7 %4)")
        .arg(QString::fromStdString(m.name))
        .arg(m.layers)
        .arg(m.kv_heads)
        .arg(m.head_dim);
}

QTableWidgetItem* number_item(double value, int decimals) {
    auto* item = new QTableWidgetItem(QString::number(value, 'f', decimals));
    item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

}  // namespace

MemoryPlannerPanel::MemoryPlannerPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("memory-planner"), parent),
      memory_(new QComboBox()),
      custom_gib_(new QDoubleSpinBox()),
      model_(new QComboBox()),
      weights_(make_combo({QStringLiteral("fp16"), QStringLiteral("int8"), QStringLiteral("int4")},
                          tr("Bits per weight: fp16 16, int8 8, int4 4.125 (a fp16 scale per 128 weights)"))),
      kv_dtype_(make_combo({QStringLiteral("f16"), QStringLiteral("q8_0")},
                           tr("KV-cache element type: f16 2 bytes, q8_0 34 bytes per 32 values"))),
      users_(new QSpinBox()),
      reserve_gib_(new QDoubleSpinBox()),
      example_(new QPushButton(tr("13B on 8 GiB: the worked &example"))),
      table_(new QTableWidget()),
      lesson_(new QLabel()),
      status_(new QLabel()),
      chosen_(new QScatterSeries()) {
    auto* x = new QValueAxis();
    x->setTitleText(tr("GPU memory (GiB)"));
    x->setLabelFormat(QStringLiteral("%d"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("tokens per user"));
    y->setLabelFormat(QStringLiteral("%d"));
    chart()->addAxis(x, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    for (const std::string& format : weight_formats()) {
        auto* series = new QLineSeries();
        series->setName(tr("%1 weights").arg(QString::fromStdString(format)));
        per_format_.push_back(series);
    }
    chosen_->setName(tr("chosen"));
    // At 8 GiB the example's 337 tokens sit on the floor of an 80 GiB axis: the label says it.
    chosen_->setPointLabelsFormat(QStringLiteral("@yPoint"));
    chosen_->setPointLabelsVisible(true);
    for (QXYSeries* s : per_format_) chart()->addSeries(s);
    chart()->addSeries(chosen_);
    for (QAbstractSeries* s : chart()->series()) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    set_axes(x, y);

    auto* box = qobject_cast<QVBoxLayout*>(layout());
    box->removeWidget(chart_area());
    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->addWidget(chart_area());
    splitter->addWidget(table_);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    splitter->setSizes({3, 2});  // proportions: the chart's size hint alone would leave it a strip
    box->addWidget(build_controls());
    wrap_within_column(lesson_);
    wrap_within_column(status_);
    box->addWidget(lesson_);
    box->addWidget(splitter, 1);
    box->addWidget(status_);
    show_lesson();
    connect_controls();
    style_series(false);
    // Opens on the worked example.
    show_worked_example();
    // Tokens per user span 0 to 10^5: on a log axis the example's 337 tokens stand clear of the floor.
    offer_log_scale(Qt::Vertical);
    set_log_scale(Qt::Vertical, true);  // recomputes
}

const std::vector<std::string>& MemoryPlannerPanel::weight_formats() {
    static const std::vector<std::string> formats = {"fp16", "int8", "int4"};
    return formats;
}

QWidget* MemoryPlannerPanel::build_device_controls() {
    for (double gib : kMemoryPresetsGiB) memory_->addItem(tr("%1 GiB").arg(gib), gib);
    memory_->addItem(tr("Custom"), kCustomMemory);
    memory_->setToolTip(tr("Device memory in GiB (2^30 bytes)"));
    custom_gib_->setRange(0.5, 2048);
    custom_gib_->setDecimals(1);
    custom_gib_->setValue(12);
    custom_gib_->setSuffix(tr(" GiB"));
    custom_gib_->setEnabled(false);
    auto* row = new QWidget();
    auto* layout = new QHBoxLayout(row);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(memory_);
    layout->addWidget(custom_gib_);
    return row;
}

QWidget* MemoryPlannerPanel::build_controls() {
    for (const BudgetModel& m : budget_model_presets()) {
        models_.push_back(m);
        model_->addItem(preset_label(m));
    }
    users_->setRange(1, 4096);
    users_->setToolTip(tr("Users sharing the resident tokens equally"));
    reserve_gib_->setRange(0, 64);
    reserve_gib_->setDecimals(2);
    reserve_gib_->setSingleStep(0.25);
    reserve_gib_->setValue(BudgetQuery{}.reserve_gib);
    reserve_gib_->setSuffix(tr(" GiB"));
    reserve_gib_->setToolTip(tr("Runtime reserve: activations, workspace, the driver's own memory"));
    example_->setToolTip(tr("13B, int4 weights, f16 KV cache, 8 GiB, 1 user"));
    auto* controls = new QWidget();
    auto* form = new QFormLayout(controls);
    form->setContentsMargins(8, 4, 8, 0);
    const auto add = [form](const QString& text, QWidget* field, QWidget* buddy) {
        auto* label = new QLabel(text);
        label->setBuddy(buddy);
        form->addRow(label, field);
    };
    add(tr("GPU &memory:"), build_device_controls(), memory_);
    add(tr("M&odel:"), model_, model_);
    add(tr("&Weights:"), weights_, weights_);
    add(tr("&KV cache:"), kv_dtype_, kv_dtype_);
    add(tr("&Users:"), users_, users_);
    add(tr("&Reserve:"), reserve_gib_, reserve_gib_);
    form->addRow(QString(), example_);
    return controls;
}

void MemoryPlannerPanel::connect_controls() {
    connect(memory_, &QComboBox::currentIndexChanged, this, [this] {
        custom_gib_->setEnabled(memory_->currentData().toDouble() == kCustomMemory);
        recompute();
    });
    connect(custom_gib_, &QDoubleSpinBox::valueChanged, this, &MemoryPlannerPanel::recompute);
    connect(reserve_gib_, &QDoubleSpinBox::valueChanged, this, &MemoryPlannerPanel::recompute);
    connect(users_, &QSpinBox::valueChanged, this, &MemoryPlannerPanel::recompute);
    for (QComboBox* combo : {model_, weights_, kv_dtype_}) {
        connect(combo, &QComboBox::currentIndexChanged, this, &MemoryPlannerPanel::recompute);
    }
    connect(example_, &QPushButton::clicked, this, &MemoryPlannerPanel::show_worked_example);
}

void MemoryPlannerPanel::set_model(const ModelSummary& summary) {
    const int loaded_index = static_cast<int>(budget_model_presets().size());
    const bool loaded_was_chosen = model_->currentIndex() == loaded_index;
    {
        // The entry and models_ change together; recompute() runs once both agree.
        const QSignalBlocker blocker(model_);
        if (static_cast<int>(models_.size()) > loaded_index) {
            models_.pop_back();
            model_->removeItem(loaded_index);
        }
        if (summary.parameters > 0 && summary.config.n_layer > 0 && summary.config.n_head_kv > 0 && summary.config.head_dim > 0) {
            const QString name = summary.name.isEmpty() ? tr("loaded model") : summary.name;
            models_.push_back({name.toStdString(), static_cast<double>(summary.parameters), summary.config.n_layer,
                               summary.config.n_head_kv, summary.config.head_dim});
            model_->addItem(tr("loaded: %1").arg(preset_label(models_.back())));
            if (loaded_was_chosen) model_->setCurrentIndex(loaded_index);
        }
    }
    recompute();
}

void MemoryPlannerPanel::add_detected_memory(const QString& device, double budget_gib) {
    const QString label = tr("%1: %2 GiB (detected budget)").arg(device).arg(budget_gib, 0, 'f', 1);
    if (memory_->findText(label) >= 0 || !(budget_gib > 0)) return;
    // Before "Custom", after the presets and any other detected device.
    memory_->insertItem(memory_->count() - 1, label, budget_gib);
}

void MemoryPlannerPanel::show_worked_example() {
    memory_->setCurrentIndex(memory_->findData(kExampleMemoryGiB));
    const auto& presets = budget_model_presets();
    const auto it =
        std::find_if(presets.begin(), presets.end(), [](const BudgetModel& m) { return m.name == kExampleModel; });
    model_->setCurrentIndex(static_cast<int>(it - presets.begin()));
    weights_->setCurrentIndex(weights_->findData(QString::fromLatin1(kExampleWeights)));
    kv_dtype_->setCurrentIndex(kv_dtype_->findData(QStringLiteral("f16")));
    users_->setValue(1);
    reserve_gib_->setValue(BudgetQuery{}.reserve_gib);
}

BudgetModel MemoryPlannerPanel::chosen_model() const { return models_.at(static_cast<size_t>(model_->currentIndex())); }

BudgetQuery MemoryPlannerPanel::query() const {
    BudgetQuery q;
    const double preset = memory_->currentData().toDouble();
    q.memory_gib = preset == kCustomMemory ? custom_gib_->value() : preset;
    q.reserve_gib = reserve_gib_->value();
    q.weights = weights_->currentData().toString().toStdString();
    q.kv_dtype = kv_dtype_->currentData().toString().toStdString();
    q.users = users_->value();
    return q;
}

void MemoryPlannerPanel::style_series(bool dark) {
    static const QColor light_colors[] = {QColor(0xC6, 0x28, 0x28), QColor(0x15, 0x65, 0xC0), QColor(0x2E, 0x7D, 0x32)};
    static const QColor dark_colors[] = {QColor(0xEF, 0x9A, 0x9A), QColor(0x4F, 0xC3, 0xF7), QColor(0xA5, 0xD6, 0xA7)};
    const std::string chosen = weights_->currentData().toString().toStdString();
    for (size_t f = 0; f < per_format_.size(); ++f) {
        QPen pen(dark ? dark_colors[f % 3] : light_colors[f % 3]);
        pen.setWidthF(weight_formats()[f] == chosen ? 3.5 : 1.5);
        per_format_[f]->setPen(pen);
    }
    chosen_->setColor(dark ? QColor(0xFF, 0xB7, 0x4D) : QColor(0xE6, 0x51, 0x00));
    chosen_->setMarkerSize(12);
}

void MemoryPlannerPanel::recompute() {
    try {
        const BudgetModel model = chosen_model();
        const BudgetQuery q = query();
        update_chart(model, q);
        update_table(q);
        style_series(chart()->theme() == QChart::ChartThemeDark);  // the chosen format's line is thicker
        status_->clear();
    } catch (const Error& e) {
        status_->setText(tr("Cannot plan this: %1").arg(QString::fromUtf8(e.what())));
    }
}

void MemoryPlannerPanel::update_chart(const BudgetModel& model, const BudgetQuery& query) {
    const int max_gib = std::max(kChartMaxGiB, static_cast<int>(std::ceil(query.memory_gib)));
    for (size_t f = 0; f < per_format_.size(); ++f) {
        BudgetQuery at = query;
        at.weights = weight_formats()[f];
        QList<QPointF> points;
        for (int gib = 1; gib <= max_gib; ++gib) {
            at.memory_gib = gib;
            const auto tokens = static_cast<double>(plan_memory_budget(model, at).tokens_per_user);
            if (tokens > 0 || !log_scale(Qt::Vertical)) points.append(QPointF(gib, tokens));  // no log of 0
        }
        per_format_[f]->replace(points);
    }
    const BudgetRow row = plan_memory_budget(model, query);
    chosen_->setName(tr("chosen (%1 GiB %2)").arg(query.memory_gib).arg(QString::fromStdString(query.weights)));
    QList<QPointF> chosen;
    if (row.tokens_per_user > 0 || !log_scale(Qt::Vertical)) {
        chosen.append(QPointF(query.memory_gib, static_cast<double>(row.tokens_per_user)));
    }
    chosen_->replace(chosen);
    const QString head = tr("%1 at %2, %3 KV, %4 GiB")
                             .arg(QString::fromStdString(model.name), QString::fromStdString(query.weights),
                                  QString::fromStdString(query.kv_dtype))
                             .arg(query.memory_gib);
    if (row.max_resident_tokens == 0) {
        chart()->setTitle(tr("%1: does not fit (%2 GiB of weights + %3 GiB reserve)")
                              .arg(head)
                              .arg(row.weight_bytes / kGiB, 0, 'f', 2)
                              .arg(query.reserve_gib));
    } else {
        chart()->setTitle(tr("%1: %2 tokens resident, %3 each for %n user(s)", nullptr, query.users)
                              .arg(head)
                              .arg(row.max_resident_tokens)
                              .arg(row.tokens_per_user));
    }
    fit_axes(max_gib - 1, 1.0);
}

void MemoryPlannerPanel::update_table(const BudgetQuery& query) {
    const QStringList headers = {tr("model"),         tr("weights"),    tr("weights (GiB)"), tr("KV bytes/token"),
                                 tr("KV room (GiB)"), tr("max tokens"), tr("tokens/user")};
    table_->clear();
    table_->setColumnCount(static_cast<int>(headers.size()));
    table_->setHorizontalHeaderLabels(headers);
    table_->setRowCount(static_cast<int>(models_.size() * weight_formats().size()));
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    int r = 0, chosen_row = -1;
    for (size_t m = 0; m < models_.size(); ++m) {
        for (const std::string& format : weight_formats()) {
            BudgetQuery at = query;
            at.weights = format;
            const BudgetRow row = plan_memory_budget(models_[m], at);
            table_->setItem(r, 0, new QTableWidgetItem(QString::fromStdString(row.model)));
            table_->setItem(r, 1, new QTableWidgetItem(QString::fromStdString(row.weights)));
            table_->setItem(r, 2, number_item(row.weight_bytes / kGiB, 2));
            table_->setItem(r, 3, number_item(row.kv_bytes_per_token, 0));
            // Negative room means the weights alone overflow the memory: say so rather than "-3.12".
            table_->setItem(r, 4, row.kv_budget_bytes > 0 ? number_item(row.kv_budget_bytes / kGiB, 2)
                                                          : new QTableWidgetItem(tr("does not fit")));
            table_->setItem(r, 5, number_item(static_cast<double>(row.max_resident_tokens), 0));
            table_->setItem(r, 6, number_item(static_cast<double>(row.tokens_per_user), 0));
            if (static_cast<int>(m) == model_->currentIndex() && format == query.weights) chosen_row = r;
            ++r;
        }
    }
    table_->resizeColumnsToContents();
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->verticalHeader()->hide();
    if (chosen_row >= 0) table_->selectRow(chosen_row);
}

void MemoryPlannerPanel::show_lesson() {
    const BudgetModel& model = budget_model_preset(kExampleModel);
    BudgetQuery q;
    q.memory_gib = kExampleMemoryGiB;
    q.weights = kExampleWeights;
    const BudgetRow row = plan_memory_budget(model, q);
    lesson_->setText(
        tr("The lesson: 13B with full multi-head attention (%1 layers \u00d7 %2 KV heads \u00d7 %3 "
           "dims, %4 bytes per token at f16) in int4 on an 8 GiB card: %5 GiB of weights + %6 GiB reserve "
           "leave room for <b>%7 tokens</b> of context. The model fits; the conversation does not.")
            .arg(model.layers)
            .arg(model.kv_heads)
            .arg(model.head_dim)
            .arg(row.kv_bytes_per_token, 0, 'f', 0)
            .arg(row.weight_bytes / kGiB, 0, 'f', 2)
            .arg(q.reserve_gib)
            .arg(row.max_resident_tokens));
}

}  // namespace inferscope::ui
