// The watchdog fitting of pass lengths (gpu/pass_fitting.h): pure arithmetic, no device.
#include <gtest/gtest.h>

#include "gpu/pass_fitting.h"

namespace inferscope::gpu {
namespace {

using std::chrono::milliseconds;

TEST(PassFitting, APassOverTheBudgetShortensLaterPassesInProportion) {
    // 512 tokens in 400 ms: a quarter of them fit 100 ms.
    EXPECT_EQ(fitted_pass_limit(512, 512, 512, milliseconds(400)), 128);
    // A shorter last pass of a prompt counts by its own length.
    EXPECT_EQ(fitted_pass_limit(512, 512, 300, milliseconds(200)), 150);
}

// A short pass tells a slow device before a long one meets its watchdog: the warm-up's 16-token
// prompt taking 40 ms means about 40 tokens fit the budget, so a 512-token prompt is split.
TEST(PassFitting, AShortPassWithinTheBudgetLowersTheLimitToWhatFits) {
    EXPECT_EQ(fitted_pass_limit(512, 512, 16, milliseconds(40)), 40);
    EXPECT_EQ(fitted_pass_limit(512, 512, 16, milliseconds(100)), kFewestPassTokens);
    EXPECT_EQ(fitted_pass_limit(512, 512, 16, milliseconds(300)), kFewestPassTokens);  // over the budget too
    // Where more than the limit fits, the limit stays (a full pass then doubles it).
    EXPECT_EQ(fitted_pass_limit(512, 512, 16, milliseconds(2)), 512);
    EXPECT_EQ(fitted_pass_limit(128, 512, 100, milliseconds(60)), 128);
}

TEST(PassFitting, ShortenedPassesKeepTheFewestTokens) {
    EXPECT_EQ(fitted_pass_limit(512, 512, 512, milliseconds(60000)), kFewestPassTokens);
    // Already at the fewest: a slow pass changes nothing.
    EXPECT_EQ(fitted_pass_limit(kFewestPassTokens, 512, kFewestPassTokens, milliseconds(5000)), kFewestPassTokens);
}

TEST(PassFitting, AFullPassWellInsideTheBudgetDoublesTheLimitUpToTheMost) {
    EXPECT_EQ(fitted_pass_limit(64, 512, 64, milliseconds(10)), 128);
    EXPECT_EQ(fitted_pass_limit(384, 512, 384, milliseconds(10)), 512);
    EXPECT_EQ(fitted_pass_limit(512, 512, 512, milliseconds(1)), 512);
}

TEST(PassFitting, OtherPassesLeaveTheLimit) {
    // Shorter than the limit (a decode step under a shortened limit), however fast.
    EXPECT_EQ(fitted_pass_limit(64, 512, 1, milliseconds(1)), 64);
    // Fewer tokens than kFewestPassTokens tell nothing of a token's cost, however slow: a
    // decode step of 8 sequences over the budget.
    EXPECT_EQ(fitted_pass_limit(512, 512, 8, milliseconds(200)), 512);
    // A full pass between a quarter of the budget and the budget.
    EXPECT_EQ(fitted_pass_limit(64, 512, 64, milliseconds(50)), 64);
    EXPECT_EQ(fitted_pass_limit(64, 512, 64, kPassBudget), 64);
}

}  // namespace
}  // namespace inferscope::gpu
