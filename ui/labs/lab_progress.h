#pragma once
// The one way a lab tab shows its jobs' progress: a QProgressBar with the range 0..1000 that
// follows the controller's lab_job_progress for the job kinds the tab owns.
#include <QString>
#include <functional>

class QObject;
class QProgressBar;

namespace inferscope::ui {

class EngineController;

// Shows on `bar` the progress (fraction in [0, 1], stage text) of every lab job whose kind
// `owns` accepts; the connection lives as long as `context`.
void follow_lab_progress(EngineController& controller, QObject* context, QProgressBar& bar,
                         std::function<bool(const QString& kind)> owns);

}  // namespace inferscope::ui
