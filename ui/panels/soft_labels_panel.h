#pragma once
// The teacher's next-token distribution as bars: the top-k tokens' probabilities at one
// temperature, the token text (with its rank) on the category axis.
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

    // One bar per token of `labels.top`: point (rank - 1, probability) in plot_data().
    void set_labels(const SoftLabels& labels);
    // The category axis's labels, "rank 'piece'" (ranks keep them unique when pieces repeat).
    QStringList categories() const;

private:
    QBarSet* probabilities_;
    QBarCategoryAxis* tokens_;
};

}  // namespace inferscope::ui
