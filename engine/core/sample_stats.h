#pragma once
// Mean and spread of repeated measurements, reported as llama-bench does (mean ± sample
// standard deviation), with the test the labs use to flag a result too noisy to read.
#include <span>
#include <vector>

namespace inferscope {

struct SampleStats {
    double mean = 0;
    double stddev = 0;  // sample standard deviation (n - 1); 0 for a single sample
    int count = 0;

    // stddev / |mean|; 0 when the mean is 0.
    double relative_spread() const;
    // Whether the spread exceeds `limit` of the mean (0.2: more than 20 %).
    bool noisy(double limit = kNoisyRelativeSpread) const { return relative_spread() > limit; }

    static constexpr double kNoisyRelativeSpread = 0.2;
};

// The stats of `samples`; all zero for none.
SampleStats sample_stats(std::span<const double> samples);

// The nearest-rank percentile (`percentile` in [0, 100]) of `values`; 0 for none.
double nearest_rank_percentile(std::vector<double> values, double percentile);

}  // namespace inferscope
