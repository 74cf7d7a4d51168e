// Round axis limits and tick steps over a table of data ranges, among them ranges whose
// fifths are 5.95 and 58713.6 (ticks a reader cannot take in).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "ui/panels/round_ticks.h"

namespace inferscope::ui {
namespace {

bool is_round_step(double step, bool integers) {
    const double magnitude = std::pow(10.0, std::floor(std::log10(step)));
    const double mantissa = step / magnitude;
    for (const double allowed : {1.0, 2.0, 2.5, 5.0}) {
        if (std::fabs(mantissa - allowed) < 1e-9) return !integers || (step >= 1 && step == std::round(step));
    }
    return false;
}

bool is_multiple(double value, double step) { return std::fabs(value / step - std::round(value / step)) < 1e-9; }

TEST(RoundTicks, EveryRangeGetsRoundLimitsThatCoverIt) {
    struct Case {
        double low, high;
        bool integers;
    };
    const Case cases[] = {{0, 29.75, false},   {0, 293568, false}, {0, 5.95, false},  {0, 1, false},
                          {0, 0.01, false},     {0, 1e-4, false},   {-5, 17, false},   {0.5, 0.75, false},
                          {3, 1e9, false},      {0, 16, true},      {0, 7, true},      {0, 3, true},
                          {1, 2047, true},      {0, 131072, true},  {-0.3, 0.3, false}};
    for (const Case& c : cases) {
        SCOPED_TRACE(std::to_string(c.low) + " .. " + std::to_string(c.high) + (c.integers ? " (integers)" : ""));
        const RoundTicks t = round_ticks(c.low, c.high, 5, c.integers);
        EXPECT_TRUE(is_round_step(t.step, c.integers)) << t.step;
        EXPECT_LE(t.min, c.low);
        EXPECT_GE(t.max, c.high);
        EXPECT_TRUE(is_multiple(t.min, t.step)) << t.min << " / " << t.step;
        EXPECT_TRUE(is_multiple(t.max, t.step)) << t.max << " / " << t.step;
        const double intervals = std::round((t.max - t.min) / t.step);
        EXPECT_GE(intervals, 1);
        EXPECT_LE(intervals, 10);
    }
}

TEST(RoundTicks, KnownRanges) {
    const RoundTicks latency = round_ticks(0, 29.75);
    EXPECT_EQ(latency.min, 0);
    EXPECT_EQ(latency.step, 5);  // 6 intervals rather than 3 of 10
    EXPECT_EQ(latency.max, 30);
    const RoundTicks bytes = round_ticks(0, 293568);
    EXPECT_EQ(bytes.step, 50000);
    EXPECT_EQ(bytes.max, 300000);
    const RoundTicks tokens = round_ticks(0, 7, 5, true);
    EXPECT_EQ(tokens.step, 1);
    EXPECT_EQ(tokens.max, 7);
    const RoundTicks few = round_ticks(0, 3, 5, true);  // no 0.5 steps on a counting axis
    EXPECT_EQ(few.step, 1);
    EXPECT_EQ(few.max, 3);
}

TEST(RoundTicks, DecimalsWriteEveryTickExactly) {
    EXPECT_EQ(round_ticks(0, 100000).decimals, 0);  // not "100000.0"
    EXPECT_EQ(round_ticks(0, 20).decimals, 0);
    EXPECT_EQ(round_ticks(0, 0.08).decimals, 2);
    EXPECT_EQ(round_ticks(0, 0.14).decimals, 3);  // step 0.025
    EXPECT_EQ(round_ticks(0, 12).decimals, 1);    // step 2.5
    EXPECT_EQ(round_ticks(0, 1e-4).decimals, 5);
    EXPECT_EQ(decimals_for_step(0), 0);
}

TEST(RoundTicks, DegenerateAndNonFiniteRanges) {
    const RoundTicks same = round_ticks(4, 4);
    EXPECT_LE(same.min, 4);
    EXPECT_GT(same.max, 4);
    const RoundTicks nan = round_ticks(std::nan(""), std::nan(""));
    EXPECT_TRUE(std::isfinite(nan.min) && std::isfinite(nan.max) && std::isfinite(nan.step));
    EXPECT_LT(nan.min, nan.max);
}

}  // namespace
}  // namespace inferscope::ui
