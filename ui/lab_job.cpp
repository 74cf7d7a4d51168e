#include "ui/lab_job.h"

#include "engine/core/error.h"

namespace inferscope::ui {

const Model& LabContext::require_model() const {
    if (!model_) throw InvalidArgument("no model is loaded: open a model (or the built-in one) first");
    return *model_;
}

}  // namespace inferscope::ui
