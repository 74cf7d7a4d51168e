#include "engine/core/sample_stats.h"

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

}  // namespace inferscope
