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

// Writes `stage` and the percentage on `bar`, the stage elided to the bar's width (a long
// one would be cut mid-word) and whole in the tooltip.
void show_progress_text(QProgressBar& bar, const QString& stage);

}  // namespace inferscope::ui
