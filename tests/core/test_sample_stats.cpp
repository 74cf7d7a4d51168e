// Mean and sample standard deviation of repeated measurements, and the 20 % noise test.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/sample_stats.h"

namespace inferscope {
namespace {

TEST(SampleStats, MeanAndSampleStandardDeviation) {
    const std::vector<double> samples = {2, 4, 4, 4, 5, 5, 7, 9};
    const SampleStats stats = sample_stats(samples);
    EXPECT_EQ(stats.count, 8);
    EXPECT_DOUBLE_EQ(stats.mean, 5.0);
    EXPECT_DOUBLE_EQ(stats.stddev, std::sqrt(32.0 / 7.0));  // squares sum to 32 over n - 1 = 7
    EXPECT_NEAR(stats.relative_spread(), std::sqrt(32.0 / 7.0) / 5.0, 1e-15);
}

TEST(SampleStats, OneSampleHasNoSpreadAndNoneIsZero) {
    const std::vector<double> one = {3.5};
    EXPECT_EQ(sample_stats(one).stddev, 0.0);
    EXPECT_EQ(sample_stats(one).mean, 3.5);
    const SampleStats none = sample_stats({});
    EXPECT_EQ(none.count, 0);
    EXPECT_EQ(none.mean, 0.0);
    EXPECT_EQ(none.relative_spread(), 0.0);
}

TEST(SampleStats, NoisyAboveTwentyPercent) {
    const std::vector<double> steady = {100, 101, 99}, noisy = {50, 100, 150};
    EXPECT_FALSE(sample_stats(steady).noisy());
    EXPECT_TRUE(sample_stats(noisy).noisy());  // stddev 50 of mean 100
    EXPECT_FALSE(sample_stats(noisy).noisy(0.6));
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(NearestRankPercentile, RanksOfUnsortedValues) {
    const std::vector<double> values = {9, 1, 7, 3, 5};
    EXPECT_EQ(nearest_rank_percentile(values, 50), 5.0);   // rank ceil(2.5) = 3
    EXPECT_EQ(nearest_rank_percentile(values, 90), 9.0);   // rank ceil(4.5) = 5
    EXPECT_EQ(nearest_rank_percentile(values, 20), 1.0);   // rank 1
    EXPECT_EQ(nearest_rank_percentile(values, 0), 1.0);    // the smallest
    EXPECT_EQ(nearest_rank_percentile({}, 50), 0.0);
}

}  // namespace
}  // namespace inferscope
