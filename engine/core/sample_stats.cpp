#include "engine/core/sample_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace inferscope {

double SampleStats::relative_spread() const { return mean != 0 ? stddev / std::fabs(mean) : 0.0; }

SampleStats sample_stats(std::span<const double> samples) {
    SampleStats stats;
    stats.count = static_cast<int>(samples.size());
    if (samples.empty()) return stats;
    const auto n = static_cast<double>(samples.size());
    stats.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
    double squares = 0;
    for (const double x : samples) squares += (x - stats.mean) * (x - stats.mean);
    stats.stddev = samples.size() > 1 ? std::sqrt(squares / (n - 1)) : 0.0;
    return stats;
}

double nearest_rank_percentile(std::vector<double> values, double percentile) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const auto rank = static_cast<size_t>(std::ceil(percentile / 100.0 * static_cast<double>(values.size())));
    return values[std::clamp<size_t>(rank, 1, values.size()) - 1];
}

}  // namespace inferscope
