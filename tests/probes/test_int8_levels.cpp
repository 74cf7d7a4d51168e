// INT8 level usage and quantization error on hand-made tensors shaped like a real model's
// residual stream: most dimensions small, one of them thousands of times larger.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/probes/int8_levels.h"

namespace inferscope {
namespace {

constexpr int64_t kTokens = 8;
constexpr int64_t kDims = 6;
constexpr int kOutlierDim = 3;

// [kTokens x kDims]: dimension 3 cycles through four large values (max 1579.6); every other
// dimension cycles through five typical ones (max 0.26), shifted per dimension.
std::vector<float> outlier_shaped_tensor() {
    const float typical[] = {0.26f, -0.1f, 0.0f, 0.1f, -0.26f};
    const float outlier[] = {1579.6f, -900.0f, 400.0f, 1200.0f};
    std::vector<float> h(static_cast<size_t>(kTokens * kDims));
    for (int64_t t = 0; t < kTokens; ++t) {
        for (int64_t d = 0; d < kDims; ++d) {
            h[static_cast<size_t>(t * kDims + d)] = d == kOutlierDim ? outlier[t % 4] : typical[(t + d) % 5];
        }
    }
    return h;
}

TEST(Int8Code, RoundsHalfAwayFromZeroAndClamps) {
    EXPECT_EQ(int8_code(0.5f, 1.0f), 1);
    EXPECT_EQ(int8_code(-0.5f, 1.0f), -1);
    EXPECT_EQ(int8_code(2.5f, 1.0f), 3);
    EXPECT_EQ(int8_code(-2.5f, 1.0f), -3);
    EXPECT_EQ(int8_code(0.49f, 1.0f), 0);
    EXPECT_EQ(int8_code(300.0f, 1.0f), 127);
    EXPECT_EQ(int8_code(-300.0f, 1.0f), -127);
    EXPECT_EQ(int8_code(5.0f, 0.0f), 0);
    EXPECT_FLOAT_EQ(int8_scale(1579.6f), 12.437795f);
}

TEST(Int8Analysis, TensorWideScaleLeavesTypicalDimensionsOneLevel) {
    const auto h = outlier_shaped_tensor();
    const Int8Analysis a = analyze_int8(h, kTokens, kDims, 1);
    EXPECT_EQ(a.tensor_max_abs, 1579.6f);
    EXPECT_NEAR(a.tensor_scale, 12.4378, 1e-4);  // 1579.6 / 127
    const Int8SchemeResult& t = a.scheme(Int8Scheme::PerTensor);
    for (int64_t d = 0; d < kDims; ++d) {
        // Typical values are below half a step (6.2), so all of them round to code 0.
        const int expected = d == kOutlierDim ? 4 : 1;  // codes 127, -72, 32, 96
        EXPECT_EQ(t.levels_used[static_cast<size_t>(d)], expected) << "dim " << d;
    }
    EXPECT_EQ(t.median_levels_used, 1.0);
    // A typical 0.26 becomes 0: the error is at least that, and never above half a step.
    EXPECT_GE(t.max_abs_error, 0.26 - 1e-6);
    EXPECT_LE(t.max_abs_error, a.tensor_scale / 2 + 1e-3);
}

TEST(Int8Analysis, SettingTheTopDimensionAsideShrinksTheScale) {
    const auto h = outlier_shaped_tensor();
    const Int8Analysis a = analyze_int8(h, kTokens, kDims, 1);
    ASSERT_EQ(a.excluded_dims, std::vector<int>{kOutlierDim});
    EXPECT_NEAR(a.reduced_scale, 0.26 / 127, 1e-8);
    EXPECT_NEAR(a.scale_shrink_ratio, 1579.6 / 0.26, 1.0);
    const Int8SchemeResult& r = a.scheme(Int8Scheme::PerTensorExcludingTop);
    EXPECT_EQ(r.scales, std::vector<float>{a.reduced_scale});
    for (int64_t d = 0; d < kDims; ++d) {
        // The kept dimension is not quantized; the others now use codes 127, -49, 0, 49, -127.
        EXPECT_EQ(r.levels_used[static_cast<size_t>(d)], d == kOutlierDim ? 0 : 5) << "dim " << d;
    }
    EXPECT_LE(r.max_abs_error, a.reduced_scale / 2 + 1e-7);
    EXPECT_LT(r.relative_error, a.scheme(Int8Scheme::PerTensor).relative_error / 100);
}

TEST(Int8Analysis, PerTokenAndPerChannelScales) {
    const auto h = outlier_shaped_tensor();
    const Int8Analysis a = analyze_int8(h, kTokens, kDims, 1);
    const Int8SchemeResult& token = a.scheme(Int8Scheme::PerToken);
    ASSERT_EQ(token.scales.size(), static_cast<size_t>(kTokens));
    // Every row holds an outlier value of at least 400, so each row's scale stays >= 3.1
    // and typical dimensions still collapse to one level.
    for (int64_t d = 0; d < kDims; ++d) {
        if (d == kOutlierDim) continue;
        EXPECT_EQ(token.levels_used[static_cast<size_t>(d)], 1) << "dim " << d;
    }
    const Int8SchemeResult& channel = a.scheme(Int8Scheme::PerChannel);
    ASSERT_EQ(channel.scales.size(), static_cast<size_t>(kDims));
    EXPECT_NEAR(channel.scales[kOutlierDim], a.tensor_scale, 1e-6);
    for (int64_t d = 0; d < kDims; ++d) EXPECT_EQ(channel.levels_used[static_cast<size_t>(d)], d == kOutlierDim ? 4 : 5);
    EXPECT_LT(channel.relative_error, a.scheme(Int8Scheme::PerTensor).relative_error);

    // The per-token error, recomputed row by row with plain loops.
    double error_sq = 0, norm_sq = 0;
    for (int64_t t = 0; t < kTokens; ++t) {
        float row_max = 0;
        for (int64_t d = 0; d < kDims; ++d) row_max = std::max(row_max, std::abs(h[static_cast<size_t>(t * kDims + d)]));
        const double scale = row_max / 127.0f;
        for (int64_t d = 0; d < kDims; ++d) {
            const double v = h[static_cast<size_t>(t * kDims + d)];
            const double code = std::max(-127.0, std::min(127.0, std::round(v / scale)));
            error_sq += (v - code * scale) * (v - code * scale);
            norm_sq += v * v;
        }
    }
    EXPECT_NEAR(token.relative_error, std::sqrt(error_sq / norm_sq), 1e-6);
}

TEST(Int8Analysis, RejectsMalformedInput) {
    const auto h = outlier_shaped_tensor();
    EXPECT_THROW(analyze_int8(h, kTokens, kDims + 1, 1), InvalidArgument);
    EXPECT_THROW(analyze_int8(h, kTokens, kDims, kDims), InvalidArgument);
    EXPECT_THROW(analyze_int8(h, kTokens, kDims, -1), InvalidArgument);
    EXPECT_THROW(analyze_int8({}, 0, kDims, 1), InvalidArgument);
    auto with_nan = h;
    with_nan[5] = NAN;
    EXPECT_THROW(analyze_int8(with_nan, kTokens, kDims, 1), InvalidArgument);
    const Int8Analysis none_excluded = analyze_int8(h, kTokens, kDims, 0);
    EXPECT_TRUE(none_excluded.excluded_dims.empty());
    EXPECT_FLOAT_EQ(none_excluded.reduced_scale, none_excluded.tensor_scale);
}

}  // namespace
}  // namespace inferscope
