#pragma once
// A next-token distribution as bars (the teacher's, or a student's beside it): the top-k
// tokens' probabilities at one temperature, the token text (with its rank) on the category axis.
#include <QStringList>

#include "engine/eval/soft_labels.h"
#include "ui/panels/chart_panel.h"

class QBarCategoryAxis;
class QBarSeries;
class QBarSet;

namespace inferscope::ui {

class SoftLabelsPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit SoftLabelsPanel(QWidget* parent = nullptr);
    // `export_name` as ChartPanel's; `distribution` names whose distribution the title shows.
    SoftLabelsPanel(const QString& export_name, const QString& distribution, QWidget* parent = nullptr);

    // One bar per token of `labels.top`: point (rank - 1, probability) in plot_data(). With
    // `student` named and labels.student_on_top filled, a second bar per token gives the
    // student's probability of the same token (series `student` in plot_data()).
    void set_labels(const SoftLabels& labels, const QString& student = QString());
    // No bars; `title` says why.
    void clear(const QString& title);
    void set_distribution_name(const QString& distribution) { distribution_ = distribution; }
    // The category axis's labels, "rank 'piece'" (ranks keep them unique when pieces repeat).
    QStringList categories() const;
    // As ChartPanel's, with the token pieces as they are (the axis shows them escaped).
    PlotData plot_data() const override;

private:
    void show_student_bars(const SoftLabels& labels, const QString& student);

    QBarSeries* series_;
    QBarSet* probabilities_;
    QBarSet* student_;  // in series_ only while a student is shown
    QBarCategoryAxis* tokens_;
    QString distribution_;
    QStringList names_;  // "rank 'piece'" per bar, unescaped
};

}  // namespace inferscope::ui
