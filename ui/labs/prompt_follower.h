#pragma once
// What the lab tabs that follow the generation prompt share: the prompt as typed, a debounce
// (a job starts once typing pauses), jobs only while the tab is shown (they would compete with
// generation for the worker otherwise; showing the tab catches up with what was typed
// meanwhile), and one running job of the lab's kind (a newer one cancels the older, whose
// result never arrives). The lab says whether its shown result still answers its controls and
// starts the job for a prompt, handing it to track() before connecting its own result slot.
#include <QObject>
#include <QString>
#include <QTimer>
#include <functional>
#include <string>

#include "ui/lab_job.h"

class QWidget;

namespace inferscope::ui {

class EngineController;

class PromptFollower : public QObject {
    Q_OBJECT
public:
    struct Hooks {
        // Whether the lab's shown result answers the current prompt and controls.
        std::function<bool()> result_is_current;
        // Starts the lab's job (of the follower's kind) for `prompt` under its current controls.
        std::function<void(const std::string& prompt)> start_job;
    };

    // `view` is the lab's tab: jobs start only while it is visible, and showing it catches up.
    PromptFollower(QWidget& view, EngineController& controller, QString kind, int debounce_ms, Hooks hooks);

    const QString& kind() const { return kind_; }
    const QString& prompt() const { return prompt_; }
    // The prompt of the last result delivered (empty before the first or after forget_result).
    const QString& analysed_prompt() const { return analysed_prompt_; }
    bool prompt_is_analysed() const { return analysed_prompt_ == prompt_; }

    // Stores `prompt` and starts a job once typing pauses for the debounce interval (if shown).
    void set_prompt(const QString& prompt);
    // Restarts the debounce: a control changed, so the result may be stale.
    void schedule();
    // Starts the job for the current prompt now (replacing a running one); nothing without a
    // model or with a blank prompt.
    void run_now();
    // The lab dropped its result (a new model): no prompt counts as analysed.
    void forget_result() { analysed_prompt_.clear(); }
    // Follows the job start_job started: once it finishes, its prompt is the analysed one
    // (before the lab's own slots, connected after this call, see the result).
    void track(const LabJobWatcher& job);

Q_SIGNALS:
    void failed(const QString& message);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QWidget& view_;
    EngineController& controller_;
    QString kind_;
    Hooks hooks_;
    QTimer debounce_;
    QString prompt_;
    QString running_prompt_;
    QString analysed_prompt_;
};

}  // namespace inferscope::ui
