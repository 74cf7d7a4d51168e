#pragma once
// A next-token distribution as bars (the teacher's, or a student's beside it): the top-k
// tokens' probabilities at one temperature, the token text (with its rank) on the category axis.
#include <QStringList>

#include "engine/eval/soft_labels.h"
#include "ui/panels/chart_panel.h"

class QBarCategoryAxis;
class QBarSet;

namespace inferscope::ui {

class SoftLabelsPanel : public ChartPanel {
    Q_OBJECT
public:
    explicit SoftLabelsPanel(QWidget* parent = nullptr);
    // `export_name` as ChartPanel's; `distribution` names whose distribution the title shows.
    SoftLabelsPanel(const QString& export_name, const QString& distribution, QWidget* parent = nullptr);

    // One bar per token of `labels.top`: point (rank - 1, probability) in plot_data().
    void set_labels(const SoftLabels& labels);
    // No bars; `title` says why.
    void clear(const QString& title);
    void set_distribution_name(const QString& distribution) { distribution_ = distribution; }
    // The category axis's labels, "rank 'piece'" (ranks keep them unique when pieces repeat).
    QStringList categories() const;

private:
    QBarSet* probabilities_;
    QBarCategoryAxis* tokens_;
    QString distribution_;
};

}  // namespace inferscope::ui
