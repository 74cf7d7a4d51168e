#include "ui/labs/lab_progress.h"

#include <QFontMetrics>
#include <QProgressBar>
#include <algorithm>

#include "ui/lab_job.h"

namespace inferscope::ui {

void show_lab_progress(const LabJobWatcher& job, QProgressBar& bar) {
    QObject::connect(&job, &LabJobWatcher::progress, &bar, [&bar](double fraction, const QString& stage) {
        bar.show();
        bar.setValue(static_cast<int>(fraction * 1000));
        show_progress_text(bar, stage);
    });
}

void show_progress_text(QProgressBar& bar, const QString& stage) {
    bar.setToolTip(stage);
    const QFontMetrics metrics(bar.font());
    // Room for the percentage at its widest and the bar's own padding.
    const int room = bar.width() - metrics.horizontalAdvance(QStringLiteral(" 100%")) - 4 * metrics.averageCharWidth();
    bar.setFormat(metrics.elidedText(stage, Qt::ElideRight, std::max(0, room)) + QStringLiteral(" %p%"));
}

}  // namespace inferscope::ui
