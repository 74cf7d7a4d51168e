// Dot products between weight rows and encoded activation rows, the activation encodings'
// rounding, the weight -> activation type mapping, and the errors for unsupported types.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "engine/formats/quant.h"
#include "engine/formats/quant_ref.h"
#include "quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::make_row;
using testing::row_buffer;

const GgmlType kWeightTypes[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q4_0, GgmlType::Q4_1,
                                 GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K,
                                 GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                                 GgmlType::IQ4_XS};

TEST(VecDotType, MatchesGgmlCpuTypeTraits) {
    EXPECT_EQ(vec_dot_type(GgmlType::F32), GgmlType::F32);
    EXPECT_EQ(vec_dot_type(GgmlType::F16), GgmlType::F16);
    EXPECT_EQ(vec_dot_type(GgmlType::BF16), GgmlType::BF16);
    EXPECT_EQ(vec_dot_type(GgmlType::Q4_0), GgmlType::Q8_0);
    EXPECT_EQ(vec_dot_type(GgmlType::Q5_0), GgmlType::Q8_0);
    EXPECT_EQ(vec_dot_type(GgmlType::Q8_0), GgmlType::Q8_0);
    EXPECT_EQ(vec_dot_type(GgmlType::Q4_1), GgmlType::Q8_1);
    EXPECT_EQ(vec_dot_type(GgmlType::Q5_1), GgmlType::Q8_1);
    EXPECT_EQ(vec_dot_type(GgmlType::IQ4_NL), GgmlType::Q8_0);
    for (GgmlType t : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::IQ4_XS}) {
        EXPECT_EQ(vec_dot_type(t), GgmlType::Q8_K);
    }
}

struct Encoded {
    std::vector<uint8_t> bytes;
    std::vector<float> values;  // the decoded values of `bytes`
};

Encoded encode(GgmlType type, const std::vector<float>& x) {
    const auto n = static_cast<int64_t>(x.size());
    Encoded e{row_buffer(type, n), std::vector<float>(x.size())};
    quantize_row(type, x.data(), e.bytes.data(), n);
    dequantize_row(type, e.bytes.data(), e.values.data(), n);
    return e;
}

// vec_dot must equal sum(dequant(w) * dequant(x)) up to float rounding: the integer parts
// are exact, and each block contributes a few float roundings (relative 2^-24 each) to a
// float running sum, so |error| <= (blocks + 8) * 2^-22 * sum|w*x|. Q4_1/Q5_1 also use the
// activation's s = f16(d*sum(q)) where the decoded values use f16(d)*q: up to 2^-10
// relative on sum(x) of the block, times |m| of the weight block.
double tolerance(GgmlType type, const Encoded& w, const Encoded& x, double abs_sum) {
    const auto n = static_cast<int64_t>(w.values.size());
    // (IQ4_XS adds one float per 32-element group, not per block.)
    const int64_t block = type == GgmlType::IQ4_XS ? 32 : ggml_type_traits(type).block_elements;
    double tol = static_cast<double>(n / block + 8) * 0x1.0p-22 * abs_sum;
    if (type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16) tol = 0x1.0p-23 * abs_sum;
    if (type == GgmlType::Q4_1 || type == GgmlType::Q5_1) {
        const size_t block_bytes = ggml_row_bytes(type, 32);
        for (int64_t b = 0; b < n / 32; ++b) {
            const float m = fp16_to_fp32(testing::get_u16(&w.bytes[b * block_bytes + 2]));
            double sum_x = 0;
            for (int j = 0; j < 32; ++j) sum_x += x.values[b * 32 + j];
            tol += std::fabs(m) * std::fabs(sum_x) * 0x1.0p-10 * 1.01;
        }
    }
    return tol + 1e-30;
}

TEST(VecDot, EqualsTheDoublePrecisionDotOfTheDecodedRows) {
    const int64_t n = 2048;
    for (GgmlType type : kWeightTypes) {
        for (Dist wdist : {Dist::Gaussian, Dist::Positive, Dist::Outliers}) {
            for (Dist xdist : {Dist::Gaussian, Dist::Outliers, Dist::ZeroBlocks}) {
                const auto w = encode(type, make_row(wdist, n, 11 + static_cast<uint32_t>(wdist)));
                const auto x = encode(vec_dot_type(type), make_row(xdist, n, 23 + static_cast<uint32_t>(xdist)));
                double exact = 0, abs_sum = 0;
                for (int64_t i = 0; i < n; ++i) {
                    exact += static_cast<double>(w.values[i]) * x.values[i];
                    abs_sum += std::fabs(static_cast<double>(w.values[i]) * x.values[i]);
                }
                const float dot = vec_dot(type, n, w.bytes.data(), x.bytes.data());
                EXPECT_NEAR(dot, exact, tolerance(type, w, x, abs_sum))
                    << ggml_type_name(type) << " w " << static_cast<int>(wdist) << " x " << static_cast<int>(xdist);
            }
        }
    }
}

TEST(VecDot, HandComputedQ8_0) {
    // w: d = 0.5, q = 1 everywhere; x: d = 2, q = j. dot = 0.5*2*sum(j) = 496.
    std::vector<uint8_t> w(34), x(34);
    testing::put_u16(w, 0, 0x3800);
    testing::put_u16(x, 0, 0x4000);
    for (int j = 0; j < 32; ++j) {
        w[2 + j] = 1;
        x[2 + j] = static_cast<uint8_t>(j);
    }
    EXPECT_EQ(vec_dot(GgmlType::Q8_0, 32, w.data(), x.data()), 496.0f);
}

TEST(VecDot, HandComputedQ4_1UsesTheMinTimesS) {
    // w: d = 1, m = -1, q = 2 (x_w = 1); x: d = 0.5, q = 2 (x = 1), s = 32 (= d*sum(q)).
    // dot = d_w*d_x*sum(q_w*q_x) + m*s = 1*0.5*128 - 32 = 32 (= 32 elements of 1*1).
    std::vector<uint8_t> w(20, 0x22), x(36, 2);
    testing::put_u16(w, 0, 0x3C00);
    testing::put_u16(w, 2, 0xBC00);
    testing::put_u16(x, 0, 0x3800);
    testing::put_u16(x, 2, 0x5000);  // 32
    EXPECT_EQ(vec_dot(GgmlType::Q4_1, 32, w.data(), x.data()), 32.0f);
    // The min term really uses s as stored: a deliberately wrong s = 0 drops it.
    testing::put_u16(x, 2, 0x0000);
    EXPECT_EQ(vec_dot(GgmlType::Q4_1, 32, w.data(), x.data()), 64.0f);
}

TEST(VecDot, HandComputedQ4_KUsesBsumsForTheMins) {
    // Q4_K weight: d = 1, dmin = 1, sub-block 0 has scale 1, min 3; all q = 0 -> x_w = -3
    // for elements 0..31, 0 elsewhere. Q8_K activation: d = 1, all q = 0, but bsums[0] = 10,
    // bsums[1] = 0: the min term is taken from bsums, so dot = -dmin*min*10 = -30 even though
    // the quants are zero (ggml relies on bsums being consistent; this pins that it is used).
    std::vector<uint8_t> w(144, 0x00), x(292, 0x00);
    testing::put_u16(w, 0, 0x3C00);
    testing::put_u16(w, 2, 0x3C00);
    w[4 + 0] = 1;  // scale 0
    w[4 + 4] = 3;  // min 0
    const uint32_t one = std::bit_cast<uint32_t>(1.0f);
    for (int i = 0; i < 4; ++i) x[i] = static_cast<uint8_t>(one >> (8 * i));
    x[260] = 10;
    EXPECT_EQ(vec_dot(GgmlType::Q4_K, 256, w.data(), x.data()), -30.0f);
}

TEST(VecDot, FloatTypesAccumulateFloatProductsInDouble) {
    // Terms far below the running sum's float ulp: a float accumulator would drop every one
    // of them; the double accumulator keeps them, and the result is rounded to float once.
    std::vector<float> w(64, 1.0f), x(64, 0.5f);
    x[0] = 0x1.0p24f;  // float ulp at 2^24 is 2: 2^24 + 0.5 rounds back to 2^24
    std::vector<uint8_t> wb(64 * 4), xb(64 * 4);
    quantize_row(GgmlType::F32, w.data(), wb.data(), 64);
    quantize_row(GgmlType::F32, x.data(), xb.data(), 64);
    EXPECT_EQ(vec_dot(GgmlType::F32, 64, wb.data(), xb.data()), static_cast<float>(0x1.0p24 + 63 * 0.5));

    std::vector<float> xs(64, 0x1.0p-14f);  // exact in f16 and bf16
    xs[0] = 2048.0f;                        // float ulp at 2048 is 2^-12
    const float expected = static_cast<float>(2048.0 + 63 * 0x1.0p-14);
    ASSERT_NE(expected, 2048.0f);
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        std::vector<uint8_t> wh(128), xh(128);
        quantize_row(type, w.data(), wh.data(), 64);
        quantize_row(type, xs.data(), xh.data(), 64);
        EXPECT_EQ(vec_dot(type, 64, wh.data(), xh.data()), expected) << ggml_type_name(type);
    }
}

// ---- activation rounding

std::vector<float> tie_block() {
    // amax = 127 makes the multiplier 127/amax exactly 1, so x*id = x and the halves are ties.
    std::vector<float> x(32, 0.0f);
    const float values[] = {0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 3.5f, 127.0f, -126.5f, 4.25f};
    for (size_t i = 0; i < std::size(values); ++i) x[i] = values[i];
    return x;
}

TEST(ActivationRounding, Q8_0RoundsHalfToEvenLikeLlamaCppX86) {
    const auto x = tie_block();
    auto bytes = row_buffer(GgmlType::Q8_0, 32);
    quantize_row(GgmlType::Q8_0, x.data(), bytes.data(), 32);
    EXPECT_EQ(testing::get_u16(bytes.data()), 0x3C00);  // d = 127/127 = 1
    const int expected[] = {0, 2, 2, 0, -2, 4, 127, -126, 4};
    for (size_t i = 0; i < std::size(expected); ++i) {
        EXPECT_EQ(static_cast<int8_t>(bytes[2 + i]), expected[i]) << "x = " << x[i];
    }
}

TEST(ActivationRounding, ReferenceQ8_0RoundsHalfAwayFromZeroLikeLlamaQuantize) {
    const auto x = tie_block();
    auto bytes = row_buffer(GgmlType::Q8_0, 32);
    quantize_row_reference(GgmlType::Q8_0, x.data(), bytes.data(), 32);
    const int expected[] = {1, 2, 3, -1, -3, 4, 127, -127, 4};
    for (size_t i = 0; i < std::size(expected); ++i) {
        EXPECT_EQ(static_cast<int8_t>(bytes[2 + i]), expected[i]) << "x = " << x[i];
    }
}

TEST(ActivationRounding, Q8_1RoundsHalfToEvenAndStoresTheScaledSum) {
    const auto x = tie_block();
    auto bytes = row_buffer(GgmlType::Q8_1, 32);
    quantize_row(GgmlType::Q8_1, x.data(), bytes.data(), 32);
    const int expected[] = {0, 2, 2, 0, -2, 4, 127, -126, 4};
    int sum = 0;
    for (size_t i = 0; i < std::size(expected); ++i) {
        EXPECT_EQ(static_cast<int8_t>(bytes[4 + i]), expected[i]);
        sum += expected[i];
    }
    EXPECT_EQ(testing::get_u16(bytes.data()), 0x3C00);
    EXPECT_EQ(testing::get_u16(bytes.data() + 2), fp32_to_fp16(static_cast<float>(sum)));  // s = d*sum
}

TEST(ActivationRounding, Q8_KUsesMinus127OverTheSignedMaxAndTiesToEven) {
    // Largest magnitude 127 (positive) -> iscale = -1: q = nearest_int(-x), d = -1.
    std::vector<float> x(256, 0.0f);
    const float values[] = {0.5f, 1.5f, 2.5f, -3.5f, 127.0f, -126.5f};
    for (size_t i = 0; i < std::size(values); ++i) x[i] = values[i];
    auto bytes = row_buffer(GgmlType::Q8_K, 256);
    quantize_row(GgmlType::Q8_K, x.data(), bytes.data(), 256);
    float d;
    std::memcpy(&d, bytes.data(), 4);
    EXPECT_EQ(d, -1.0f);
    const int expected[] = {0, -2, -2, 4, -127, 126};
    int sum = 0;
    for (size_t i = 0; i < std::size(expected); ++i) {
        EXPECT_EQ(static_cast<int8_t>(bytes[4 + i]), expected[i]) << "x = " << x[i];
        sum += expected[i];
    }
    EXPECT_EQ(static_cast<int16_t>(bytes[260] | (bytes[261] << 8)), sum);  // bsums[0]
}

// ---- errors

void expect_unsupported(const std::function<void()>& call, const std::string& type_name) {
    try {
        call();
        ADD_FAILURE() << "no exception for " << type_name;
    } catch (const UnsupportedError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find(type_name), std::string::npos) << message;
        EXPECT_NE(message.find("Q4_K"), std::string::npos) << "should list the supported types: " << message;
    }
}

TEST(QuantErrors, UnsupportedTypesNameTheTypeAndListTheSupportedOnes) {
    std::vector<uint8_t> bytes(1024);
    std::vector<float> floats(256);
    expect_unsupported([&] { dequantize_row(GgmlType::IQ2_XXS, bytes.data(), floats.data(), 256); }, "IQ2_XXS");
    expect_unsupported([&] { dequantize_row(GgmlType::MXFP4, bytes.data(), floats.data(), 32); }, "MXFP4");
    // The other i-quants and the ternary types stay unsupported, each named in the error.
    for (GgmlType type : {GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                          GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::TQ1_0, GgmlType::TQ2_0}) {
        const std::string name(ggml_type_name(type));
        expect_unsupported([&] { quantize_row(type, floats.data(), bytes.data(), 256); }, name);
        expect_unsupported([&] { dequantize_row(type, bytes.data(), floats.data(), 256); }, name);
        expect_unsupported([&] { vec_dot_type(type); }, name);
        EXPECT_FALSE(ggml_type_traits(type).weight_supported) << name;
    }
    expect_unsupported([&] { quantize_row_reference(GgmlType::TQ2_0, floats.data(), bytes.data(), 256); }, "TQ2_0");
    expect_unsupported([&] { vec_dot_type(GgmlType::IQ3_S); }, "IQ3_S");
    expect_unsupported([&] { vec_dot(GgmlType::I32, 4, bytes.data(), bytes.data()); }, "I32");
    // Q8_1 and Q8_K are activation encodings, not weight types with a dot product.
    expect_unsupported([&] { vec_dot(GgmlType::Q8_K, 256, bytes.data(), bytes.data()); }, "Q8_K");
    expect_unsupported([&] { vec_dot_type(GgmlType::Q8_1); }, "Q8_1");
    // An id no ggml version defines still gets a readable message.
    expect_unsupported([&] { dequantize_row(static_cast<GgmlType>(4), bytes.data(), floats.data(), 32); }, "4");
}

TEST(QuantErrors, PartialBlocksAreRejected) {
    std::vector<uint8_t> bytes(1024);
    std::vector<float> floats(256);
    EXPECT_THROW(dequantize_row(GgmlType::Q4_0, bytes.data(), floats.data(), 33), InvalidArgument);
    EXPECT_THROW(quantize_row(GgmlType::Q6_K, floats.data(), bytes.data(), 128), InvalidArgument);
    EXPECT_THROW(vec_dot(GgmlType::Q4_K, 100, bytes.data(), bytes.data()), InvalidArgument);
    EXPECT_THROW(dequantize_row(GgmlType::F16, bytes.data(), floats.data(), -1), InvalidArgument);
    EXPECT_NO_THROW(dequantize_row(GgmlType::Q4_0, bytes.data(), floats.data(), 0));
}

}  // namespace
}  // namespace inferscope
