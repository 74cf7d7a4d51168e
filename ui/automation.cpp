#include "ui/automation.h"

#include <QPlainTextEdit>
#include <cstdio>

#include "ui/engine_controller.h"
#include "ui/generation_panel.h"
#include "ui/main_window.h"

namespace inferscope::ui {

AutomationRunner::AutomationRunner(MainWindow& window, AutomationOptions options, QObject* parent)
    : QObject(parent), window_(window), options_(std::move(options)) {
    EngineController& c = window_.controller();
    connect(&c, &EngineController::load_failed, this, [this](const QString&, const QString& message) { fail(message); });
    connect(&c, &EngineController::generation_failed, this, [this](const QString& message) { fail(message); });
    // Each stage ends when the controller goes idle.
    connect(&c, &EngineController::busy_changed, this, [this](bool busy) {
        if (!busy) on_idle();
    });
}

void AutomationRunner::start() {
    stage_ = Stage::Loading;
    window_.open_model(options_.model);
}

void AutomationRunner::on_idle() {
    if (failed_ || stage_ == Stage::Done) return;
    if (stage_ == Stage::Loading) {
        if (!window_.controller().has_model()) return fail(QObject::tr("the model did not load"));
        if (options_.generate > 0) {
            stage_ = Stage::Generating;
            if (!options_.prompt.isEmpty()) window_.generation_panel().set_prompt(options_.prompt);
            window_.generation_panel().set_n_predict(options_.generate);
            window_.start_generation();
            return;
        }
    }
    complete();
}

void AutomationRunner::complete() {
    stage_ = Stage::Done;
    if (options_.generate > 0) {
        std::printf("%s\n", qPrintable(window_.generation_panel().output_view()->toPlainText()));
        std::fflush(stdout);
    }
    if (!options_.export_dir.isEmpty()) {
        const QStringList errors = window_.export_all_charts(options_.export_dir);
        if (!errors.isEmpty()) return fail(errors.join(QLatin1Char('\n')));
        std::fprintf(stderr, "exported %d charts to %s\n", static_cast<int>(window_.chart_panels().size()),
                     qPrintable(options_.export_dir));
    }
    if (!options_.screenshot_dir.isEmpty()) {
        const QStringList errors = window_.save_screenshots(options_.screenshot_dir);
        if (!errors.isEmpty()) return fail(errors.join(QLatin1Char('\n')));
        std::fprintf(stderr, "saved screenshots to %s\n", qPrintable(options_.screenshot_dir));
    }
    emit finished(0);
}

void AutomationRunner::fail(const QString& message) {
    if (failed_) return;
    failed_ = true;
    stage_ = Stage::Done;
    std::fprintf(stderr, "error: %s\n", qPrintable(message));
    emit finished(1);
}

}  // namespace inferscope::ui
