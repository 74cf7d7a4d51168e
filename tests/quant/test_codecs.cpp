// Round trips of every scheme on hand-made matrices whose codes are known exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "engine/quant/codecs.h"
#include "engine/quant/matrix_quantizer.h"

namespace inferscope {
namespace {

// [2 x 4]: row 0 has absmax 7 (int4 scale 1), row 1 absmax 0.875 (int4 scale 1/8); the
// halves (2.5, -3.5) test rounding half to even.
const std::vector<float> kHandMade = {7.0f, -3.0f, 2.5f, 1.4f,  //
                                      0.875f, -0.4375f, 0.3f, -0.875f};

std::vector<int> codes_of(const EncodedMatrix& e) { return {e.codes.begin(), e.codes.end()}; }

TEST(QuantCodecs, Int4RowCodesAreExact) {
    const QuantScheme s = parse_quant_scheme("int4:row");
    const EncodedMatrix e = encode_matrix(s, kHandMade.data(), 2, 4);
    EXPECT_EQ(codes_of(e), (std::vector<int>{7, -3, 2, 1, 7, -4, 2, -7}));
    EXPECT_EQ(e.scales, (std::vector<float>{1.0f, 0.125f}));
    EXPECT_EQ(decode_matrix(s, e, 2, 4),
              (std::vector<float>{7.0f, -3.0f, 2.0f, 1.0f, 0.875f, -0.5f, 0.25f, -0.875f}));
}

TEST(QuantCodecs, Int4TensorUsesOneScaleForAllRows) {
    const QuantScheme s = parse_quant_scheme("int4:tensor");
    const EncodedMatrix e = encode_matrix(s, kHandMade.data(), 2, 4);
    EXPECT_EQ(codes_of(e), (std::vector<int>{7, -3, 2, 1, 1, 0, 0, -1}));
    EXPECT_EQ(e.scales, (std::vector<float>{1.0f}));
    EXPECT_EQ(decode_matrix(s, e, 2, 4), (std::vector<float>{7.0f, -3.0f, 2.0f, 1.0f, 1.0f, 0.0f, 0.0f, -1.0f}));
}

TEST(QuantCodecs, Int4GroupsOfTwoHaveAScaleEach) {
    const QuantScheme s = parse_quant_scheme("int4:g2");
    const EncodedMatrix e = encode_matrix(s, kHandMade.data(), 2, 4);
    // Group (2.5, 1.4): scale 2.5/7, 1.4 -> 3.92 -> 4.
    EXPECT_EQ(codes_of(e), (std::vector<int>{7, -3, 7, 4, 7, -4, 2, -7}));
    ASSERT_EQ(e.scales.size(), 4u);
    EXPECT_EQ(e.scales[0], 1.0f);
    EXPECT_EQ(e.scales[1], fp16_to_fp32(fp32_to_fp16(2.5f / 7.0f)));
    EXPECT_EQ(e.scales[2], 0.125f);
    EXPECT_EQ(e.scales[3], 0.125f);
    const std::vector<float> w_hat = decode_matrix(s, e, 2, 4);
    EXPECT_EQ(w_hat[3], 4.0f * e.scales[1]);
}

TEST(QuantCodecs, Int8AndInt2RowsAreExact) {
    const std::vector<float> w = {127.0f, -64.0f, 0.5f, 1.5f};  // scale 1; halves to even
    const EncodedMatrix e8 = encode_matrix(parse_quant_scheme("int8:row"), w.data(), 1, 4);
    EXPECT_EQ(codes_of(e8), (std::vector<int>{127, -64, 0, 2}));
    const std::vector<float> w2 = {1.0f, -1.0f, 0.4f, 0.6f};  // qmax 1
    const EncodedMatrix e2 = encode_matrix(parse_quant_scheme("int2:row"), w2.data(), 1, 4);
    EXPECT_EQ(codes_of(e2), (std::vector<int>{1, -1, 0, 1}));
}

TEST(QuantCodecs, CodesClampToMinusQmaxMinusOneAndQmax) {
    // A run coded with a scale from a smaller absmax than its own (as a tensor scale can be
    // for a slice): codes clamp to [-8, 7] at 4 bits.
    const std::vector<float> w = {-20.0f, 20.0f, -7.6f, 3.0f};
    std::vector<int8_t> codes(4);
    std::vector<float> w_hat(4);
    const float stored = int_quantize_run(w.data(), 4, 7.0f, 4, ScaleFormat::F16, codes.data(), w_hat.data());
    EXPECT_EQ(stored, 1.0f);
    EXPECT_EQ(std::vector<int>(codes.begin(), codes.end()), (std::vector<int>{-8, 7, -8, 3}));
    EXPECT_EQ(w_hat, (std::vector<float>{-8.0f, 7.0f, -8.0f, 3.0f}));
}

TEST(QuantCodecs, AllZeroRunsEncodeZeros) {
    const std::vector<float> w(8, 0.0f);
    for (const char* text : {"int4:row", "int4:tensor", "int8:g4", "nf4:4"}) {
        const QuantScheme s = parse_quant_scheme(text);
        const EncodedMatrix e = encode_matrix(s, w.data(), 2, 4);
        EXPECT_EQ(decode_matrix(s, e, 2, 4), w) << text;
    }
}

TEST(QuantCodecs, Nf4LevelsAreTheNormalQuantilesOfQLoRA) {
    // QLoRA (Dettmers et al. 2023), appendix E / bitsandbytes' published NF4 table.
    const float published[16] = {-1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
                                  -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
                                  0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f,
                                  0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,
                                  0.7229568362236023f, 1.0f};
    for (int i = 0; i < 16; ++i) EXPECT_NEAR(nf4_levels()[static_cast<size_t>(i)], published[i], 2e-6) << i;
    EXPECT_EQ(nf4_levels()[7], 0.0f);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(nf4_nearest_level(nf4_levels()[static_cast<size_t>(i)]), i);
    EXPECT_EQ(nf4_nearest_level(-1.5f), 0);
    EXPECT_EQ(nf4_nearest_level(0.03f), 7);
    EXPECT_EQ(nf4_nearest_level(0.05f), 8);
}

TEST(QuantCodecs, Nf4BlocksCodeTheNearestLevelTimesAbsmax) {
    const QuantScheme s = parse_quant_scheme("nf4:4");
    const std::vector<float> w = {-2.0f, 0.0f, 2.0f, 0.8f,  // absmax 2: 0.8 -> 0.4 -> level 12 (0.4407)
                                  0.5f, -0.25f, 0.1f, 0.0f};  // absmax 0.5: -0.5 -> level 2 (-0.5251)
    const EncodedMatrix e = encode_matrix(s, w.data(), 1, 8);
    EXPECT_EQ(codes_of(e), (std::vector<int>{0, 7, 15, 12, 15, 2, 9, 7}));
    EXPECT_EQ(e.scales, (std::vector<float>{2.0f, 0.5f}));
    const std::vector<float> w_hat = decode_matrix(s, e, 1, 8);
    EXPECT_EQ(w_hat[0], -2.0f);
    EXPECT_EQ(w_hat[2], 2.0f);
    EXPECT_EQ(w_hat[3], nf4_levels()[12] * 2.0f);
    EXPECT_EQ(w_hat[5], nf4_levels()[2] * 0.5f);
}

TEST(QuantCodecs, GgufSchemesHaveNoIntCodes) {
    EXPECT_THROW(encode_matrix(parse_quant_scheme("q8_0"), kHandMade.data(), 2, 4), InvalidArgument);
    EXPECT_THROW(encode_matrix(parse_quant_scheme("int4:g3"), kHandMade.data(), 2, 4), InvalidArgument);
}

// The GGUF schemes through quantize_matrix: hand-made rows on each format's grid come back
// exactly, with the codes ggml's layout says.
TEST(QuantCodecs, Q8_0RowOnItsGridIsExact) {
    std::vector<float> w(32);  // amax 127/64: d = 1/64 exactly, codes = 64 x w
    for (int i = 0; i < 32; ++i) w[static_cast<size_t>(i)] = static_cast<float>(4 * i - 64) / 64.0f;
    w[0] = -127.0f / 64.0f;
    ThreadPool pool(2);
    const QuantizedMatrix q = quantize_matrix(parse_quant_scheme("q8_0"), w.data(), 1, 32, 127.0f / 64.0f, pool);
    ASSERT_EQ(q.type, GgmlType::Q8_0);
    ASSERT_EQ(q.bytes.size(), 34u);
    uint16_t d = 0;
    std::memcpy(&d, q.bytes.data(), 2);
    EXPECT_EQ(fp16_to_fp32(d), 1.0f / 64.0f);
    EXPECT_EQ(static_cast<int8_t>(q.bytes[2]), -127);
    for (int i = 1; i < 32; ++i) EXPECT_EQ(static_cast<int8_t>(q.bytes[static_cast<size_t>(2 + i)]), 4 * i - 64);
    EXPECT_EQ(q.error.relative, 0.0);
    EXPECT_EQ(q.error.max_abs, 0.0);
}

TEST(QuantCodecs, Q4_0RowOnItsGridIsExact) {
    std::vector<float> w(32);  // (k - 8) / 2 for k = 0..15, twice: d = -4 / -8 = 0.5, q = k
    for (int i = 0; i < 32; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i % 16 - 8) * 0.5f;
    ThreadPool pool(1);
    const QuantizedMatrix q = quantize_matrix(parse_quant_scheme("q4_0"), w.data(), 1, 32, 4.0f, pool);
    ASSERT_EQ(q.bytes.size(), 18u);
    // Byte j holds element j in its low nibble and element j + 16 in its high nibble.
    for (int j = 0; j < 16; ++j) {
        EXPECT_EQ(q.bytes[static_cast<size_t>(2 + j)] & 0x0F, j % 16);
        EXPECT_EQ(q.bytes[static_cast<size_t>(2 + j)] >> 4, (j + 16) % 16);
    }
    EXPECT_EQ(q.error.relative, 0.0);
}

// llama-quantize's K-quant encoders search their scales and store them in 6 or 8 bits, so
// even integer data does not come back bit-exact: it comes back within half a step.
TEST(QuantCodecs, KQuantRowsOnAnIntegerGridComeBackWithinHalfAStep) {
    std::vector<float> w(512);  // two rows of one super-block each
    for (int i = 0; i < 512; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i % 16);  // Q4_K: 16 levels
    ThreadPool pool(2);
    const QuantizedMatrix q4 = quantize_matrix(parse_quant_scheme("q4_k"), w.data(), 2, 256, 15.0f, pool);
    EXPECT_EQ(q4.type, GgmlType::Q4_K);
    EXPECT_EQ(q4.bytes.size(), 2u * 144u);
    EXPECT_LT(q4.error.max_abs, 0.5);
    for (int i = 0; i < 512; ++i) w[static_cast<size_t>(i)] = static_cast<float>(i % 64 - 32);  // Q6_K: 64 levels
    const QuantizedMatrix q6 = quantize_matrix(parse_quant_scheme("q6_k"), w.data(), 2, 256, 32.0f, pool);
    EXPECT_EQ(q6.type, GgmlType::Q6_K);
    EXPECT_EQ(q6.bytes.size(), 2u * 210u);
    EXPECT_LT(q6.error.max_abs, 0.5);
    std::vector<float> decoded(256);
    dequantize_row(GgmlType::Q6_K, q6.bytes.data() + 210, decoded.data(), 256);
    for (int i = 0; i < 256; ++i) EXPECT_EQ(std::round(decoded[static_cast<size_t>(i)]), static_cast<float>(i % 64 - 32)) << i;
}

std::vector<float> gaussian_matrix(int64_t rows, int64_t cols, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 0.02f);
    std::vector<float> w(static_cast<size_t>(rows * cols));
    for (float& v : w) v = normal(rng);
    return w;
}

// quantize_matrix (parallel, executed form) agrees with the codec's encode/decode, and
// its error is the one computed directly.
TEST(QuantCodecs, ParallelQuantizationMatchesEncodeDecode) {
    const int64_t rows = 37, cols = 128;
    const std::vector<float> w = gaussian_matrix(rows, cols, 3);
    ThreadPool pool(3);
    for (const char* text : {"int4:tensor", "int4:row", "int3:g32", "int8:g64:bf16", "nf4", "nf4:32:f32"}) {
        SCOPED_TRACE(text);
        const QuantScheme s = parse_quant_scheme(text);
        float absmax = 0;
        for (float v : w) absmax = std::max(absmax, std::fabs(v));
        const QuantizedMatrix q = quantize_matrix(s, w.data(), rows, cols, absmax, pool);
        const std::vector<float> expected = decode_matrix(s, encode_matrix(s, w.data(), rows, cols), rows, cols);
        ASSERT_EQ(q.type, GgmlType::F32);
        ASSERT_EQ(q.bytes.size(), expected.size() * sizeof(float));
        EXPECT_EQ(std::memcmp(q.bytes.data(), expected.data(), q.bytes.size()), 0);
        double diff = 0, ref = 0, max_abs = 0;
        for (size_t i = 0; i < w.size(); ++i) {
            diff += (static_cast<double>(w[i]) - expected[i]) * (static_cast<double>(w[i]) - expected[i]);
            ref += static_cast<double>(w[i]) * w[i];
            max_abs = std::max(max_abs, std::fabs(static_cast<double>(w[i]) - expected[i]));
        }
        EXPECT_NEAR(q.error.relative, std::sqrt(diff / ref), 1e-12);
        EXPECT_DOUBLE_EQ(q.error.max_abs, static_cast<float>(max_abs));
        EXPECT_GT(q.error.relative, 0.0);
    }
}

TEST(QuantCodecs, ErrorShrinksWithBitsAndFinerGranularity) {
    const std::vector<float> w = gaussian_matrix(16, 256, 5);
    ThreadPool pool(2);
    float absmax = 0;
    for (float v : w) absmax = std::max(absmax, std::fabs(v));
    auto error = [&](const char* text) { return quantize_matrix(parse_quant_scheme(text), w.data(), 16, 256, absmax, pool).error.relative; };
    EXPECT_GT(error("int2:row"), error("int3:row"));
    EXPECT_GT(error("int3:row"), error("int4:row"));
    EXPECT_GT(error("int4:row"), error("int8:row"));
    EXPECT_GT(error("int4:tensor"), error("int4:row"));
    EXPECT_GT(error("int4:row"), error("int4:g32"));
    EXPECT_GT(error("int4:g64"), error("nf4"));  // Gaussian weights: NF4's levels fit better
    EXPECT_GT(error("q4_0"), error("q8_0"));
    EXPECT_GT(error("q4_k"), error("q6_k"));
    EXPECT_LT(error("int8:row"), 0.01);
}

TEST(QuantCodecs, WeightStatsCountOutliers) {
    std::vector<float> w(1000, 0.0f);
    for (size_t i = 0; i < w.size(); ++i) w[i] = (i % 2 == 0 ? 1.0f : -1.0f);
    w[10] = 100.0f;  // one planted outlier
    ThreadPool pool(3);
    const WeightStats s = weight_stats(w.data(), static_cast<int64_t>(w.size()), 6.0, pool);
    double sum = 0, sum_squares = 0;
    for (float v : w) {
        sum += v;
        sum_squares += static_cast<double>(v) * v;
    }
    const double mean = sum / 1000.0;
    const double std = std::sqrt(sum_squares / 1000.0 - mean * mean);
    EXPECT_NEAR(s.std, std, 1e-12);
    EXPECT_NEAR(s.mean_abs, (999.0 + 100.0) / 1000.0, 1e-12);
    EXPECT_EQ(s.max_abs, 100.0);
    EXPECT_NEAR(s.max_over_std, 100.0 / std, 1e-9);
    EXPECT_EQ(s.beyond_k_sigma, 1);
    EXPECT_DOUBLE_EQ(s.beyond_share, 0.001);
    EXPECT_EQ(weight_stats(w.data(), 1000, 0.1, pool).beyond_k_sigma, 1000);
}

}  // namespace
}  // namespace inferscope
