// IEEE half and bfloat16 conversions (engine/core/fp16.h), directly and through the F16 /
// BF16 rows of dequantize_row / quantize_row.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "engine/core/fp16.h"
#include "engine/formats/quant.h"

namespace inferscope {
namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

TEST(Fp16, DecodesKnownValues) {
    EXPECT_EQ(fp16_to_fp32(0x3C00), 1.0f);
    EXPECT_EQ(fp16_to_fp32(0x3800), 0.5f);
    EXPECT_EQ(fp16_to_fp32(0xC000), -2.0f);
    EXPECT_EQ(fp16_to_fp32(0x7BFF), 65504.0f);
    EXPECT_EQ(fp16_to_fp32(0x3555), 0.333251953125f);
    EXPECT_EQ(bits(fp16_to_fp32(0x0000)), 0x00000000u);
    EXPECT_EQ(bits(fp16_to_fp32(0x8000)), 0x80000000u);  // -0 keeps its sign
}

TEST(Fp16, DecodesSubnormals) {
    EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));         // smallest subnormal
    EXPECT_EQ(fp16_to_fp32(0x0002), std::ldexp(1.0f, -23));
    EXPECT_EQ(fp16_to_fp32(0x03FF), std::ldexp(1023.0f, -24));      // largest subnormal
    EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));         // smallest normal
    EXPECT_EQ(fp16_to_fp32(0x8155), -std::ldexp(341.0f, -24));
}

TEST(Fp16, DecodesInfAndNan) {
    EXPECT_EQ(fp16_to_fp32(0x7C00), std::numeric_limits<float>::infinity());
    EXPECT_EQ(fp16_to_fp32(0xFC00), -std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7E00)));
    EXPECT_TRUE(std::isnan(fp16_to_fp32(0x7C01)));  // signalling NaN pattern stays a NaN
}

TEST(Fp16, EncodesKnownValues) {
    EXPECT_EQ(fp32_to_fp16(1.0f), 0x3C00);
    EXPECT_EQ(fp32_to_fp16(0.5f), 0x3800);
    EXPECT_EQ(fp32_to_fp16(-2.0f), 0xC000);
    EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7BFF);
    EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
    EXPECT_EQ(fp32_to_fp16(1.0f / 3.0f), 0x3555);
}

TEST(Fp16, EncodingRoundsToNearestEven) {
    const float ulp = std::ldexp(1.0f, -10);  // spacing of halves in [1, 2)
    EXPECT_EQ(fp32_to_fp16(1.0f + ulp / 2), 0x3C00);              // tie -> even (down)
    EXPECT_EQ(fp32_to_fp16(1.0f + 3 * ulp / 2), 0x3C02);          // tie -> even (up)
    EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + ulp / 2, 2.0f)), 0x3C01);  // just above a tie
    EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + 3 * ulp / 2, 0.0f)), 0x3C01);
    EXPECT_EQ(fp32_to_fp16(2047.0f / 1024.0f + ulp / 2), 0x4000);  // mantissa carry into exponent
}

TEST(Fp16, EncodingOverflowsToInfinity) {
    EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7BFF);   // below the halfway point to 65536
    EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7C00);   // tie between 65504 (odd) and 65536 -> inf
    EXPECT_EQ(fp32_to_fp16(1e10f), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-1e10f), 0xFC00);
    EXPECT_EQ(fp32_to_fp16(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(fp32_to_fp16(-std::numeric_limits<float>::infinity()), 0xFC00);
}

TEST(Fp16, EncodesSubnormalsAndUnderflow) {
    const float tiny = std::ldexp(1.0f, -24);  // smallest half subnormal
    EXPECT_EQ(fp32_to_fp16(tiny), 0x0001);
    EXPECT_EQ(fp32_to_fp16(tiny / 2), 0x0000);             // tie between 0 and 1 unit -> 0
    EXPECT_EQ(fp32_to_fp16(std::nextafter(tiny / 2, 1.0f)), 0x0001);
    EXPECT_EQ(fp32_to_fp16(tiny * 1.5f), 0x0002);          // tie between 1 and 2 units -> 2
    EXPECT_EQ(fp32_to_fp16(tiny * 2.5f), 0x0002);          // tie between 2 and 3 units -> 2
    EXPECT_EQ(fp32_to_fp16(std::ldexp(1023.5f, -24)), 0x0400);  // rounds up into the normals
    EXPECT_EQ(fp32_to_fp16(-tiny * 3), 0x8003);
    EXPECT_EQ(fp32_to_fp16(1e-30f), 0x0000);
    EXPECT_EQ(fp32_to_fp16(-1e-30f), 0x8000);
}

TEST(Fp16, EncodesNanAsQuietNan) {
    const uint16_t h = fp32_to_fp16(std::numeric_limits<float>::quiet_NaN());
    EXPECT_EQ(h & 0x7C00, 0x7C00);
    EXPECT_NE(h & 0x03FF, 0);
    EXPECT_TRUE(std::isnan(fp16_to_fp32(h)));
}

TEST(Fp16, EveryHalfRoundTrips) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = fp16_to_fp32(static_cast<uint16_t>(h));
        if (std::isnan(f)) continue;
        ASSERT_EQ(fp32_to_fp16(f), h) << std::hex << h;
    }
}

TEST(Bf16, ConvertsKnownValues) {
    EXPECT_EQ(bf16_to_fp32(0x3F80), 1.0f);
    EXPECT_EQ(bf16_to_fp32(0xC040), -3.0f);
    EXPECT_EQ(fp32_to_bf16(1.0f), 0x3F80);
    EXPECT_EQ(fp32_to_bf16(-3.0f), 0xC040);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
    EXPECT_EQ(fp32_to_bf16(-0.0f), 0x8000);
}

TEST(Bf16, RoundsToNearestEven) {
    const float ulp = std::ldexp(1.0f, -7);
    EXPECT_EQ(fp32_to_bf16(1.0f + ulp / 2), 0x3F80);      // tie -> even (down)
    EXPECT_EQ(fp32_to_bf16(1.0f + 3 * ulp / 2), 0x3F82);  // tie -> even (up)
    EXPECT_EQ(fp32_to_bf16(std::nextafter(1.0f + ulp / 2, 2.0f)), 0x3F81);
    EXPECT_EQ(fp32_to_bf16(std::numeric_limits<float>::max()), 0x7F80);  // rounds to inf
}

TEST(Bf16, KeepsSubnormalsAndQuietsNan) {
    // ggml (current) does not flush float subnormals to zero when converting to bf16.
    EXPECT_EQ(fp32_to_bf16(std::bit_cast<float>(0x00012345u)), 0x0001);
    EXPECT_EQ(bf16_to_fp32(0x0001), std::bit_cast<float>(0x00010000u));
    const uint16_t nan = fp32_to_bf16(std::bit_cast<float>(0x7F800001u));  // signalling NaN
    EXPECT_EQ(nan, 0x7FC0);
    EXPECT_TRUE(std::isnan(bf16_to_fp32(nan)));
}

TEST(FloatRows, F16AndBf16RowsUseTheConversions) {
    const std::vector<float> x = {1.0f, -2.0f, 0.5f, 65520.0f, 1.0f + std::ldexp(1.0f, -11)};
    std::vector<uint8_t> f16(2 * x.size()), bf16(2 * x.size());
    quantize_row(GgmlType::F16, x.data(), f16.data(), static_cast<int64_t>(x.size()));
    quantize_row(GgmlType::BF16, x.data(), bf16.data(), static_cast<int64_t>(x.size()));
    const std::vector<uint8_t> f16_expected = {0x00, 0x3C, 0x00, 0xC0, 0x00, 0x38, 0x00, 0x7C, 0x00, 0x3C};
    const std::vector<uint8_t> bf16_expected = {0x80, 0x3F, 0x00, 0xC0, 0x00, 0x3F, 0x80, 0x47, 0x80, 0x3F};
    EXPECT_EQ(f16, f16_expected);
    EXPECT_EQ(bf16, bf16_expected);

    std::vector<float> back(x.size());
    dequantize_row(GgmlType::F16, f16.data(), back.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(back, (std::vector<float>{1.0f, -2.0f, 0.5f, std::numeric_limits<float>::infinity(), 1.0f}));
    dequantize_row(GgmlType::BF16, bf16.data(), back.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(back, (std::vector<float>{1.0f, -2.0f, 0.5f, 65536.0f, 1.0f}));
}

TEST(FloatRows, F32RowIsACopy) {
    const std::vector<float> x = {1.5f, -0.0f, 3e-40f, std::numeric_limits<float>::infinity()};
    std::vector<uint8_t> bytes(4 * x.size());
    quantize_row(GgmlType::F32, x.data(), bytes.data(), 4);
    std::vector<float> back(4);
    dequantize_row(GgmlType::F32, bytes.data(), back.data(), 4);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(bits(back[i]), bits(x[i]));
}

}  // namespace
}  // namespace inferscope
