#include "ui/lab_job.h"

#include <memory>

#include "engine/core/error.h"

namespace inferscope::ui {

const Model& LabContext::require_model() const {
    if (!model_) throw InvalidArgument("no model is loaded: open a model (or the built-in one) first");
    return *model_;
}

Progress LabContext::engine_progress(std::function<QString(const ProgressUpdate&)> describe) const {
    struct LastShown {
        int percent = -1;
        QString text;
    };
    auto last = std::make_shared<LastShown>();
    return Progress(
        [this, describe = std::move(describe), last](const ProgressUpdate& update) {
            const int percent = static_cast<int>(update.fraction * 100);
            QString text = describe(update);
            if (percent == last->percent && text == last->text) return;
            last->percent = percent;
            last->text = text;
            progress(update.fraction, std::move(text));
        },
        [this] { return cancelled(); });
}

}  // namespace inferscope::ui
