#pragma once
// The batching lab tab: a batch-size slider (each move measures a short batched decode at
// that B on the loaded model and adds the point to both curves), a Sweep button (the whole
// curve, with progress), the knee in one line, and the static-vs-continuous replay of a
// request trace priced with a step-cost model built from the measured points; "Run for
// real" serves the same trace on the loaded model beside the simulation. Cancel stops
// whichever of the tab's jobs is running.
#include <QList>
#include <QWidget>
#include <map>
#include <vector>

#include "ui/labs/lab_measurements.h"

class QLabel;
class QProgressBar;
class QPushButton;
class QSlider;
class QSpinBox;

namespace inferscope::ui {

class BatchCurvePanel;
class ChartPanel;
class EngineController;
class ServingReplayPanel;

class BatchingLab : public QWidget {
    Q_OBJECT
public:
    static inline const QString kPointJob = QStringLiteral("batching/point");
    static inline const QString kSweepJob = QStringLiteral("batching/sweep");
    static inline const QString kReplayJob = QStringLiteral("batching/replay");
    static inline const QString kRealReplayJob = QStringLiteral("batching/replay-real");

    explicit BatchingLab(EngineController& controller, QWidget* parent = nullptr);

    QList<ChartPanel*> panels() const;
    QSlider& batch_slider() const { return *batch_slider_; }
    QPushButton& sweep_button() const { return *sweep_button_; }
    QPushButton& real_replay_button() const { return *real_replay_button_; }
    QPushButton& cancel_button() const { return *cancel_button_; }
    QLabel& status() const { return *status_; }
    BatchCurvePanel& throughput_panel() const { return *throughput_; }
    BatchCurvePanel& step_panel() const { return *step_; }
    ServingReplayPanel& replay_panel() const { return *replay_; }
    QString knee_text() const;
    // "", or the measured batch sizes whose throughput spread exceeds 20 % of the mean.
    QString noisy_points_text() const;

    // Measured rows by batch size (a newer measurement of a B replaces the older).
    std::vector<BatchBenchRow> rows() const;
    int knee_batch() const;
    // Lengths of each measured decode and the batch sizes of a sweep.
    void set_run_settings(int prompt_tokens, int generate_tokens, std::vector<int> sweep_batches);
    TraceOptions trace_options() const;
    int replay_slots() const;
    // Sets the replayed trace's requests, median and largest output, and slots.
    void set_trace(int requests, int median_output_tokens, int max_output_tokens, int slot_count);

    // Starts a sweep, or cancels the running one.
    void sweep();
    // Serves the replay's trace for real on the loaded model (both policies).
    void replay_for_real();
    // Cancels every running job of this tab.
    void cancel();

Q_SIGNALS:
    void rows_changed();
    void replay_changed();

private:
    QWidget* build_controls();
    QWidget* build_replay_controls();
    void connect_controller();
    // Ends a job of this tab: the sweep button, the status line on failure or cancel, and
    // the Cancel button and progress bar after every end.
    void watch(LabJobWatcher& job);
    void measure(const QString& kind, std::vector<int> batch_sizes);
    void add_rows(const BatchBenchReport& report, bool replace_all);
    void replay();
    void set_model_ready(bool ready);
    void end_sweep();
    void trace_changed();
    void update_cancel_button();

    EngineController& controller_;
    QSlider* batch_slider_;
    QLabel* batch_label_;
    QPushButton* sweep_button_;
    QSpinBox* repeats_ = nullptr;
    QPushButton* real_replay_button_;
    QPushButton* cancel_button_;
    QProgressBar* progress_;
    QLabel* knee_label_;
    QLabel* status_;
    QSpinBox* requests_;
    QSpinBox* median_tokens_;
    QSpinBox* max_tokens_;
    QSpinBox* slots_;
    BatchCurvePanel* throughput_;
    BatchCurvePanel* step_;
    ServingReplayPanel* replay_;
    BatchRunSettings point_settings_;
    std::vector<int> sweep_batches_ = {1, 2, 4, 8, 16, 32, 64};
    std::map<int, BatchBenchRow> rows_;  // by batch size
};

}  // namespace inferscope::ui
