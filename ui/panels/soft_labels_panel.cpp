#include "ui/panels/soft_labels_panel.h"

#include <QBarCategoryAxis>
#include <QBarSeries>
#include <QBarSet>
#include <QValueAxis>
#include <algorithm>

namespace inferscope::ui {

SoftLabelsPanel::SoftLabelsPanel(QWidget* parent)
    : SoftLabelsPanel(QStringLiteral("soft-labels"), tr("Next-token distribution"), parent) {}

SoftLabelsPanel::SoftLabelsPanel(const QString& export_name, const QString& distribution, QWidget* parent)
    : ChartPanel(export_name, parent),
      series_(new QBarSeries()),
      probabilities_(new QBarSet(tr("probability"))),
      student_(new QBarSet(QString(), this)),
      tokens_(new QBarCategoryAxis()),
      distribution_(distribution) {
    chart()->setTitle(distribution_);
    auto* series = series_;
    series->append(probabilities_);
    tokens_->setTitleText(tr("next token (rank 'piece')"));
    auto* y = new QValueAxis();
    y->setTitleText(tr("probability at T"));
    y->setRange(0, 1);
    chart()->addSeries(series);
    chart()->addAxis(tokens_, Qt::AlignBottom);
    chart()->addAxis(y, Qt::AlignLeft);
    series->attachAxis(tokens_);
    series->attachAxis(y);
    chart()->legend()->hide();
}

void SoftLabelsPanel::set_labels(const SoftLabels& labels, const QString& student) {
    show_student_bars(labels, student);
    QStringList names;
    QList<qreal> values;
    for (size_t i = 0; i < labels.top.size(); ++i) {
        names << QStringLiteral("%1 '%2'").arg(i + 1).arg(QString::fromStdString(labels.top[i].text));
        values << labels.top[i].probability;
    }
    replace_bar_values(probabilities_, values);
    names_ = names;
    // Axis labels are rich text: a piece such as "</s>" or "<0x0A>" would vanish as a tag.
    QStringList shown;
    for (const QString& name : names) shown << name.toHtmlEscaped();
    tokens_->setCategories(shown);
    chart()->setTitle(
        tr("%1 at T = %2: top %3").arg(distribution_).arg(labels.temperature, 0, 'f', 2).arg(labels.top.size()));
}

void SoftLabelsPanel::show_student_bars(const SoftLabels& labels, const QString& student) {
    const bool shown = !student.isEmpty() && labels.student_on_top.size() == labels.top.size();
    replace_bar_values(student_, {});
    if (!shown) {
        if (series_->barSets().contains(student_)) {
            series_->take(student_);
            student_->setParent(this);  // kept for the next student, whatever happens to the series
        }
        probabilities_->setLabel(tr("probability"));
        chart()->legend()->hide();
        return;
    }
    probabilities_->setLabel(tr("teacher"));
    student_->setLabel(tr("student (%1), on the teacher's tokens").arg(student));
    student_->append(QList<qreal>(labels.student_on_top.begin(), labels.student_on_top.end()));
    if (!series_->barSets().contains(student_)) series_->append(student_);
    // Set here, not by the theme: a set appended again keeps the colour of the theme it left.
    student_->setColor(dark_theme() ? QColor(0xFF, 0xB7, 0x4D) : QColor(0xE6, 0x51, 0x00));
    chart()->legend()->show();
}

void SoftLabelsPanel::clear(const QString& title) {
    show_student_bars({}, QString());
    replace_bar_values(probabilities_, {});
    names_.clear();
    tokens_->clear();
    chart()->setTitle(title);
}

QStringList SoftLabelsPanel::categories() const { return names_; }

PlotData SoftLabelsPanel::plot_data() const {
    PlotData data = ChartPanel::plot_data();
    data.categories = names_;
    return data;
}

}  // namespace inferscope::ui
