#include "ui/panels/quant_panels.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QLabel>
#include <QLayout>
#include <QRegularExpression>
#include <QValueAxis>
#include <algorithm>
#include <numeric>

#include "ui/wrapping_label.h"
#include "ui/number_format.h"

namespace inferscope::ui {
namespace {

// Beyond this many groups the layer numbers would overlap: they stay in the export and tooltips.
constexpr int kMaxLabelledGroups = 40;

QBarSeries* bar_chart(QChart* chart, QBarSet* set, QBarCategoryAxis* x, QValueAxis* y) {
    auto* series = new QBarSeries();
    if (set != nullptr) series->append(set);
    chart->addSeries(series);
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    series->attachAxis(x);
    series->attachAxis(y);
    chart->legend()->hide();
    return series;
}

}  // namespace

double bytes_to_mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

QuantErrorPanel::QuantErrorPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("quant-errors"), parent),
      series_(nullptr),
      groups_axis_(new QBarCategoryAxis()),
      error_axis_(new QValueAxis()),
      summary_(new QLabel()) {
    chart()->setTitle(tr("Relative error per matrix"));
    groups_axis_->setTitleText(tr("layer (block)"));
    error_axis_->setTitleText(tr("\u2016W \u2212 \u0174\u2016 / \u2016W\u2016"));
    error_axis_->setRange(0, 1);
    series_ = bar_chart(chart(), nullptr, groups_axis_, error_axis_);
    chart()->legend()->show();
    connect(series_, &QBarSeries::hovered, this, &QuantErrorPanel::show_tooltip);
    wrap_within_column(summary_);
    layout()->addWidget(summary_);
}

QuantErrorPanel::Bar QuantErrorPanel::parse_matrix_name(const QString& name) {
    static const QRegularExpression block(QStringLiteral("^blk\\.(\\d+)\\.(.+?)(\\.weight)?$"));
    const QRegularExpressionMatch match = block.match(name);
    Bar bar;
    bar.name = name;
    bar.group = match.hasMatch() ? match.captured(1) : name;
    bar.kind = match.hasMatch() ? match.captured(2) : name;
    return bar;
}

void QuantErrorPanel::show_tooltip(bool on, int group, QBarSet* set) {
    if (!on || set == nullptr || group < 0 || group >= groups_.size()) return;
    for (const Bar& bar : bars_) {
        if (bar.group != groups_[group] || bar.kind != set->label()) continue;
        chart_view()->setToolTip(tr("%1 (%2 x %3): relative error %4, %5 bits/weight")
                                     .arg(bar.name)
                                     .arg(bar.rows)
                                     .arg(bar.cols)
                                     .arg(format_number(bar.relative_error, 4))
                                     .arg(format_number(bar.bits_per_weight, 4)));
        return;
    }
}

void QuantErrorPanel::set_report(const QuantReport& report) {
    bars_.clear();
    if (report.schemes.empty()) return clear();
    const SchemeSummary& scheme = report.schemes.front();
    double source_bits = 0, parameters = 0;
    for (size_t i = 0; i < report.matrices.size() && i < scheme.matrices.size(); ++i) {
        const MatrixInfo& m = report.matrices[i];
        Bar bar = parse_matrix_name(QString::fromStdString(m.name));
        bar.rows = m.rows;
        bar.cols = m.cols;
        bar.relative_error = scheme.matrices[i].error.relative;
        bar.bits_per_weight = scheme.matrices[i].bits_per_weight;
        bars_.push_back(bar);
        source_bits += static_cast<double>(m.source_bytes) * 8.0;
        parameters += static_cast<double>(m.rows) * static_cast<double>(m.cols);
    }
    const QString name = QString::fromStdString(scheme.scheme.name());
    chart()->setTitle(bars_.empty() ? tr("Relative error per matrix: %1").arg(name)
                                    : tr("Relative error per matrix: %1 (worst, highlighted: %2, %3)")
                                          .arg(name, bars_[static_cast<size_t>(worst_matrix())].name)
                                          .arg(format_number(scheme.worst_relative_error, 4)));
    summary_->setText(tr("%1: %2 bits/weight over %3 quantized matrices (as stored in the file: %4); model %5 MiB "
                         "(file: %6 MiB); relative error mean %7, weighted by parameters %8. Hover a bar for its matrix.")
                          .arg(name)
                          .arg(scheme.bits_per_weight, 0, 'f', 3)
                          .arg(bars_.size())
                          .arg(format_number(parameters > 0 ? source_bits / parameters : 0.0, 4))
                          .arg(bytes_to_mib(scheme.model_bytes), 0, 'f', 2)
                          .arg(bytes_to_mib(report.reference_bytes), 0, 'f', 2)
                          .arg(format_number(scheme.mean_relative_error, 4))
                          .arg(format_number(scheme.weighted_relative_error, 4)));
    redraw();
}

void QuantErrorPanel::clear() {
    bars_.clear();
    chart()->setTitle(tr("Relative error per matrix"));
    summary_->clear();
    redraw();
}

void QuantErrorPanel::set_order(Order order) {
    order_ = order;
    redraw();
}

int QuantErrorPanel::worst_matrix() const {
    if (bars_.empty()) return -1;
    // The first of equal errors, as the engine names its worst matrix.
    const auto worst = std::max_element(bars_.begin(), bars_.end(),
                                        [](const Bar& a, const Bar& b) { return a.relative_error < b.relative_error; });
    return static_cast<int>(worst - bars_.begin());
}

int QuantErrorPanel::highlighted_bar() const {
    const auto it = std::find(display_.begin(), display_.end(), worst_matrix());
    return it == display_.end() ? -1 : static_cast<int>(it - display_.begin());
}

QString QuantErrorPanel::summary_line() const { return summary_->text(); }

QStringList QuantErrorPanel::categories() const {
    QStringList names;
    for (const int i : display_) names << bars_[static_cast<size_t>(i)].name;
    return names;
}

QStringList QuantErrorPanel::group_labels() const { return groups_; }

void QuantErrorPanel::redraw() {
    display_.resize(bars_.size());
    std::iota(display_.begin(), display_.end(), 0);
    if (order_ == Order::ByError) {
        std::stable_sort(display_.begin(), display_.end(), [this](int a, int b) {
            return bars_[static_cast<size_t>(a)].relative_error > bars_[static_cast<size_t>(b)].relative_error;
        });
    }
    const double max_error = draw_groups();
    apply_round_ticks(error_axis_, 0, max_error > 0 ? max_error * 1.05 : 1.0);
    style_series(dark_theme());
}

double QuantErrorPanel::draw_groups() {
    double max_error = 0;
    // Groups in the order their first matrix is exported: file order, or by each group's worst.
    groups_.clear();
    kinds_.clear();
    for (const int i : display_) {
        const Bar& bar = bars_[static_cast<size_t>(i)];
        if (!groups_.contains(bar.group)) groups_ << bar.group;
    }
    for (const Bar& bar : bars_) {
        if (!kinds_.contains(bar.kind)) kinds_ << bar.kind;
    }
    series_->clear();
    for (const QString& kind : kinds_) {
        QList<qreal> values(groups_.size(), 0.0);
        for (const Bar& bar : bars_) {
            if (bar.kind != kind) continue;
            values[groups_.indexOf(bar.group)] = bar.relative_error;
            max_error = std::max(max_error, bar.relative_error);
        }
        auto* set = new QBarSet(kind);
        set->append(values);
        series_->append(set);
    }
    groups_axis_->setCategories(groups_);
    groups_axis_->setLabelsVisible(groups_.size() <= kMaxLabelledGroups);
    // Qt elides the title of a category axis without labels to nothing: the summary line says instead.
    groups_axis_->setTitleVisible(groups_.size() <= kMaxLabelledGroups);
    chart()->legend()->setVisible(!kinds_.isEmpty());
    return max_error;
}

void QuantErrorPanel::style_series(bool dark) {
    const int worst = worst_matrix();
    if (worst < 0) return;
    const Bar& bar = bars_[static_cast<size_t>(worst)];
    // Black (white on dark) is none of the theme's bar colours, so the worst bar stands out.
    const QColor worst_color = dark ? QColor(0xFA, 0xFA, 0xFA) : QColor(0x21, 0x21, 0x21);
    for (QBarSet* set : series_->barSets()) {
        set->deselectAllBars();
        set->setSelectedColor(worst_color);
        if (set->label() == bar.kind) set->selectBar(static_cast<int>(groups_.indexOf(bar.group)));
    }
}

PlotData QuantErrorPanel::plot_data() const {
    PlotData data;
    data.title = chart()->title();
    data.x_label = tr("matrix");
    data.y_label = error_axis_->titleText();
    PlotSeries errors{tr("relative error"), {}}, rows{tr("rows"), {}}, cols{tr("cols"), {}}, bits{tr("bits/weight"), {}};
    for (size_t position = 0; position < display_.size(); ++position) {
        const Bar& bar = bars_[static_cast<size_t>(display_[position])];
        const auto x = static_cast<double>(position);
        data.categories << bar.name;
        errors.points.push_back(QPointF(x, bar.relative_error));
        rows.points.push_back(QPointF(x, static_cast<double>(bar.rows)));
        cols.points.push_back(QPointF(x, static_cast<double>(bar.cols)));
        bits.points.push_back(QPointF(x, bar.bits_per_weight));
    }
    data.series << errors << rows << cols << bits;
    return data;
}

QuantQualityPanel::QuantQualityPanel(QWidget* parent)
    : ChartPanel(QStringLiteral("quant-quality"), parent),
      kl_(new QBarSet(tr("KL mean (nats/token)"))),
      schemes_(new QBarCategoryAxis()),
      kl_axis_(new QValueAxis()) {
    chart()->setTitle(tr("Quality against the unquantized model"));
    schemes_->setTitleText(tr("scheme"));  // named in exports; on screen the bars' labels say it
    schemes_->setTitleVisible(false);
    kl_axis_->setTitleText(tr("KL, nats/token"));
    kl_axis_->setRange(0, 1);
    bar_chart(chart(), kl_, schemes_, kl_axis_);
}

void QuantQualityPanel::set_rows(const std::vector<QualityRow>& rows) {
    rows_ = rows;
    QStringList names;
    QList<qreal> values;
    double max_kl = 0;
    for (size_t i = 0; i < rows_.size(); ++i) {
        // Numbered: the same scheme may be measured twice.
        names << QStringLiteral("%1. %2").arg(i + 1).arg(QString::fromStdString(rows_[i].scheme));
        values << rows_[i].kl_mean;
        max_kl = std::max(max_kl, rows_[i].kl_mean);
    }
    replace_bar_values(kl_, values);
    schemes_->setCategories(names);
    apply_round_ticks(kl_axis_, 0, max_kl > 0 ? max_kl * 1.05 : 1.0);
}

void QuantQualityPanel::append_exported_series(PlotData& data) const {
    PlotSeries bits{tr("bits/weight"), {}}, size{tr("size MiB"), {}}, ppl{tr("PPL"), {}}, delta{tr("dPPL"), {}},
        top1{tr("top-1 agreement"), {}};
    for (size_t i = 0; i < rows_.size(); ++i) {
        const auto x = static_cast<double>(i);
        bits.points.push_back(QPointF(x, rows_[i].bits_per_weight));
        size.points.push_back(QPointF(x, bytes_to_mib(rows_[i].model_bytes)));
        ppl.points.push_back(QPointF(x, rows_[i].ppl));
        delta.points.push_back(QPointF(x, rows_[i].delta_ppl()));
        top1.points.push_back(QPointF(x, rows_[i].top1_agreement));
    }
    data.series << bits << size << ppl << delta << top1;
    PlotSeries passed{tr("battery passed"), {}}, reference_passed{tr("battery passed (unquantized)"), {}};
    for (size_t i = 0; i < rows_.size(); ++i) {
        if (!rows_[i].battery || !rows_[i].reference_battery) continue;
        passed.points.push_back(QPointF(static_cast<double>(i), rows_[i].battery->passed));
        reference_passed.points.push_back(QPointF(static_cast<double>(i), rows_[i].reference_battery->passed));
    }
    if (!passed.points.isEmpty()) data.series << passed << reference_passed;
}

}  // namespace inferscope::ui
