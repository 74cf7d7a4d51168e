#include "ui/labs/lab_progress.h"

#include <QProgressBar>

#include "ui/engine_controller.h"

namespace inferscope::ui {

void follow_lab_progress(EngineController& controller, QObject* context, QProgressBar& bar,
                         std::function<bool(const QString& kind)> owns) {
    QObject::connect(&controller, &EngineController::lab_job_progress, context,
                     [&bar, owns = std::move(owns)](const QString& kind, quint64, double fraction, const QString& stage) {
                         if (!owns(kind)) return;
                         bar.show();
                         bar.setValue(static_cast<int>(fraction * 1000));
                         bar.setFormat(stage);
                     });
}

}  // namespace inferscope::ui
