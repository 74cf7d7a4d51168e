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
    connect(&controller_, &EngineController::lab_job_finished, this, [this](const QString& kind, quint64, const std::any& result) {
        if (kind != kind_) return;
        analysed_prompt_ = running_prompt_;
        Q_EMIT finished(result);
    });
    connect(&controller_, &EngineController::lab_job_failed, this, [this](const QString& kind, quint64, const QString& message) {
        if (kind == kind_) Q_EMIT failed(message);
    });
    view_.installEventFilter(this);
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
    controller_.run_lab_job({kind_, hooks_.make_job(prompt_.toStdString())});
}

}  // namespace inferscope::ui
