#include "engine/core/progress.h"

#include <algorithm>
#include <utility>

namespace inferscope {

Progress::Progress(Reporter reporter, CancelCheck cancelled)
    : reporter_(std::move(reporter)), cancelled_(std::move(cancelled)) {}

void Progress::report(std::string_view stage, int64_t done, int64_t total, std::string_view item) const {
    if (!reporter_) return;
    const double within = total > 0 ? std::clamp(static_cast<double>(done) / static_cast<double>(total), 0.0, 1.0) : 0.0;
    reporter_({begin_ + (end_ - begin_) * within, stage, item, done, total});
}

Progress Progress::share(double begin, double end) const {
    Progress part = *this;
    const double width = end_ - begin_;
    part.begin_ = begin_ + width * std::clamp(begin, 0.0, 1.0);
    part.end_ = begin_ + width * std::clamp(end, begin, 1.0);
    return part;
}

Progress Progress::part(int64_t index, int64_t count) const {
    if (count < 1) return *this;
    return share(static_cast<double>(index) / static_cast<double>(count),
                 static_cast<double>(index + 1) / static_cast<double>(count));
}

}  // namespace inferscope
