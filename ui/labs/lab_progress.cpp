#include "ui/labs/lab_progress.h"

#include <QFontMetrics>
#include <QProgressBar>
#include <algorithm>

#include "ui/engine_controller.h"

namespace inferscope::ui {

void follow_lab_progress(EngineController& controller, QObject* context, QProgressBar& bar,
                         std::function<bool(const QString& kind)> owns) {
    QObject::connect(&controller, &EngineController::lab_job_progress, context,
                     [&bar, owns = std::move(owns)](const QString& kind, quint64, double fraction, const QString& stage) {
                         if (!owns(kind)) return;
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
