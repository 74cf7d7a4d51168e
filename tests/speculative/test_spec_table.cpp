// The analytic speculative-decoding table: hand-computed values, the worked example's
// two speed-ups, the alpha = 1 limit and bad inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/core/error.h"
#include "engine/speculative/spec_table.h"

namespace inferscope {
namespace {

TEST(SpecTable, ExpectedTokensIsTheGeometricSum) {
    EXPECT_DOUBLE_EQ(expected_tokens_per_verify(0.5, 2), 1.75);  // 1 + 0.5 + 0.25
    EXPECT_DOUBLE_EQ(expected_tokens_per_verify(0.0, 8), 1.0);   // only the target's own token
    EXPECT_NEAR(expected_tokens_per_verify(0.9, 8), 6.12579511, 1e-8);  // (1 - 0.9^9) / 0.1
}

TEST(SpecTable, WorkedExampleSpeedups) {
    // alpha 0.9, gamma 8, c 0.1: 6.12579511 / 1.8 = 3.4032
    EXPECT_NEAR(speculative_speedup(0.9, 8, 0.1), 3.40321951, 1e-8);
    EXPECT_EQ(std::round(speculative_speedup(0.9, 8, 0.1) * 100) / 100, 3.40);
    // alpha 0.3: (1 - 0.3^9) / 0.7 = 1.42854331; / 1.8 = 0.7936 (slower than no speculation)
    EXPECT_NEAR(speculative_speedup(0.3, 8, 0.1), 0.79363517, 1e-8);
    EXPECT_EQ(std::round(speculative_speedup(0.3, 8, 0.1) * 100) / 100, 0.79);
}

TEST(SpecTable, AlphaOneYieldsGammaPlusOne) {
    EXPECT_DOUBLE_EQ(expected_tokens_per_verify(1.0, 4), 5.0);
    EXPECT_DOUBLE_EQ(speculative_speedup(1.0, 4, 0.25), 2.5);  // 5 / (4 x 0.25 + 1)
    EXPECT_NEAR(expected_tokens_per_verify(1.0 - 1e-9, 8), 9.0, 1e-6);  // continuous at 1
    EXPECT_DOUBLE_EQ(speculative_speedup(0.0, 4, 0.1), 1.0 / 1.4);
}

TEST(SpecTable, RowsNestAlphaThenGammaThenCost) {
    const auto rows = speculative_table({0.3, 0.9}, {1, 8}, {0.1, 0.5});
    ASSERT_EQ(rows.size(), 8u);
    EXPECT_EQ(rows[0].alpha, 0.3);
    EXPECT_EQ(rows[0].gamma, 1);
    EXPECT_EQ(rows[1].cost_ratio, 0.5);
    EXPECT_EQ(rows[2].gamma, 8);
    EXPECT_EQ(rows[4].alpha, 0.9);
    EXPECT_NEAR(rows[0].expected_tokens_per_verify, 1.3, 1e-12);  // 1 + 0.3
    EXPECT_NEAR(rows[1].speedup, 1.3 / 1.5, 1e-12);
    EXPECT_NEAR(rows[6].speedup, 3.40321951, 1e-8);
}

TEST(SpecTable, BadInputsAreClearErrors) {
    EXPECT_THROW(expected_tokens_per_verify(1.2, 4), InvalidArgument);
    EXPECT_THROW(expected_tokens_per_verify(-0.1, 4), InvalidArgument);
    EXPECT_THROW(expected_tokens_per_verify(std::numeric_limits<double>::quiet_NaN(), 4), InvalidArgument);
    EXPECT_THROW(expected_tokens_per_verify(0.5, 0), InvalidArgument);
    EXPECT_THROW(speculative_speedup(0.5, 4, -0.1), InvalidArgument);
    EXPECT_THROW(speculative_table({}, {1}, {0.1}), InvalidArgument);
    try {
        expected_tokens_per_verify(2.0, 4);
        FAIL();
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("alpha"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace inferscope
