#pragma once
// The one way a lab tab shows its jobs' progress: a QProgressBar with the range 0..1000 that
// follows a job's progress signal.
#include <QString>

class QProgressBar;

namespace inferscope::ui {

class LabJobWatcher;

// Shows on `bar` the progress (fraction in [0, 1], stage text) of `job` while both live.
void show_lab_progress(const LabJobWatcher& job, QProgressBar& bar);

// Writes `stage` and the percentage on `bar`, the stage elided to the bar's width (a long
// one would be cut mid-word) and whole in the tooltip.
void show_progress_text(QProgressBar& bar, const QString& stage);

}  // namespace inferscope::ui
