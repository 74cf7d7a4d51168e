#include "ui/labs/prompt_follower.h"

#include <QEvent>
#include <QWidget>

#include "ui/engine_controller.h"

namespace inferscope::ui {

PromptFollower::PromptFollower(QWidget& view, EngineController& controller, QString kind, int debounce_ms, Hooks hooks)
    : QObject(&view), view_(view), controller_(controller), kind_(std::move(kind)), hooks_(std::move(hooks)) {
    debounce_.setSingleShot(true);
    debounce_.setInterval(debounce_ms);
    connect(&debounce_, &QTimer::timeout, this, [this] {
        if (view_.isVisible() && !hooks_.result_is_current()) run_now();
    });
    view_.installEventFilter(this);
}

void PromptFollower::track(const LabJobWatcher& job) {
    connect(&job, &LabJobWatcher::finished, this, [this, prompt = running_prompt_] { analysed_prompt_ = prompt; });
    connect(&job, &LabJobWatcher::failed, this, &PromptFollower::failed);
}

bool PromptFollower::eventFilter(QObject* watched, QEvent* event) {
    if (watched == &view_ && event->type() == QEvent::Show && !hooks_.result_is_current()) debounce_.start();
    return QObject::eventFilter(watched, event);
}

void PromptFollower::set_prompt(const QString& prompt) {
    prompt_ = prompt;
    debounce_.start();
}

void PromptFollower::schedule() { debounce_.start(); }

void PromptFollower::run_now() {
    debounce_.stop();
    if (!controller_.has_model() || prompt_.trimmed().isEmpty()) return;
    running_prompt_ = prompt_;
    hooks_.start_job(prompt_.toStdString());
}

}  // namespace inferscope::ui
