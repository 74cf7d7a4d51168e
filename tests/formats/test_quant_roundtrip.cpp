// Quantize -> dequantize round trips: error bounds derived per format, exact round trips
// for blocks that must survive re-encoding, and golden hashes produced by ggml's own code.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "engine/core/fp16.h"
#include "engine/formats/quant.h"
#include "engine/formats/quant_ref.h"
#include "quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::get_u16;
using testing::make_row;
using testing::row_buffer;

constexpr int64_t kN = 4096;
constexpr float kHalfUlp = 0x1.0p-11f;  // relative rounding error of an f16 scale

std::vector<float> round_trip(GgmlType type, const std::vector<float>& x, std::vector<uint8_t>* bytes_out = nullptr) {
    const auto n = static_cast<int64_t>(x.size());
    auto bytes = row_buffer(type, n);
    quantize_row(type, x.data(), bytes.data(), n);
    std::vector<float> y(x.size());
    dequantize_row(type, bytes.data(), y.data(), n);
    if (bytes_out != nullptr) *bytes_out = std::move(bytes);
    return y;
}

struct BlockStats {
    float amax = 0, min = 0, max = 0;
};

BlockStats stats(const float* x, int n) {
    BlockStats s{0.0f, x[0], x[0]};
    for (int i = 0; i < n; ++i) {
        s.amax = std::max(s.amax, std::fabs(x[i]));
        s.min = std::min(s.min, x[i]);
        s.max = std::max(s.max, x[i]);
    }
    return s;
}

// ---- legacy formats: per-element bounds from the block's own range.
// Symmetric formats (Q4_0: d = max/-8, Q5_0: d = max/-16): |err| <= |d| -- one full step at
// the clamped end (x = -max maps to 8/16 steps, clamped to 7/15), half a step elsewhere --
// plus the f16 rounding of d times the largest level. Asymmetric formats (Q4_1, Q5_1):
// half a step (max-min)/15 or /31, plus the f16 rounding of d and m.
float legacy_bound(GgmlType type, const BlockStats& s) {
    const float range = s.max - s.min;
    switch (type) {
        case GgmlType::Q4_0: return s.amax / 8 * (1 + 8 * kHalfUlp) + 1e-6f * s.amax;
        case GgmlType::Q5_0: return s.amax / 16 * (1 + 16 * kHalfUlp) + 1e-6f * s.amax;
        case GgmlType::Q4_1:
            return range / 15 * 0.5f + kHalfUlp * (range + std::fabs(s.min)) + 1e-6f * (range + std::fabs(s.min));
        case GgmlType::Q5_1:
            return range / 31 * 0.5f + kHalfUlp * (range + std::fabs(s.min)) + 1e-6f * (range + std::fabs(s.min));
        default: return 0;
    }
}

TEST(QuantRoundTrip, LegacyFormatsStayWithinOneStep) {
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1}) {
        for (Dist dist : testing::kAllDists) {
            const auto x = make_row(dist, kN, 7 + static_cast<uint32_t>(dist));
            const auto y = round_trip(type, x);
            for (int64_t b = 0; b < kN / 32; ++b) {
                const float bound = legacy_bound(type, stats(&x[b * 32], 32));
                for (int64_t i = b * 32; i < b * 32 + 32; ++i) {
                    ASSERT_LE(std::fabs(x[i] - y[i]), bound)
                        << ggml_type_name(type) << " dist " << static_cast<int>(dist) << " element " << i;
                }
            }
        }
    }
}

TEST(QuantRoundTrip, Q8_0QuantsAreWithinHalfAStepOfTheFloatScale) {
    // q = round(x * 127/amax): |x/d - q| <= 1/2 with the float d = amax/127 (before f16
    // rounding); the decoded value uses f16(d), which adds at most 127*|d - f16(d)|.
    for (Dist dist : testing::kAllDists) {
        const auto x = make_row(dist, kN, 100 + static_cast<uint32_t>(dist));
        std::vector<uint8_t> bytes;
        const auto y = round_trip(GgmlType::Q8_0, x, &bytes);
        for (int64_t b = 0; b < kN / 32; ++b) {
            const float d = stats(&x[b * 32], 32).amax / 127.0f;
            const float dh = fp16_to_fp32(get_u16(&bytes[b * 34]));
            for (int j = 0; j < 32; ++j) {
                const int64_t i = b * 32 + j;
                const auto q = static_cast<int8_t>(bytes[b * 34 + 2 + j]);
                if (d > 0) {
                    ASSERT_LE(std::fabs(x[i] / d - q), 0.5f + 1e-5f) << i;
                }
                ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * dh + 127 * std::fabs(d - dh) + 1e-6f * d) << i;
            }
        }
    }
}

TEST(QuantRoundTrip, Q8_KIsWithinHalfAStep) {
    // d = max/-127 is a float32 (no f16 rounding): |err| <= |d|/2 up to float rounding.
    for (Dist dist : testing::kAllDists) {
        const auto x = make_row(dist, kN, 200 + static_cast<uint32_t>(dist));
        const auto y = round_trip(GgmlType::Q8_K, x);
        for (int64_t b = 0; b < kN / 256; ++b) {
            const float d = stats(&x[b * 256], 256).amax / 127.0f;
            for (int64_t i = b * 256; i < b * 256 + 256; ++i) {
                ASSERT_LE(std::fabs(x[i] - y[i]), 0.5f * d * (1 + 1e-5f)) << i;
            }
        }
    }
}

// ---- K-quants. Two properties:
//  1. Each element decodes to the level of its own sub-block grid that is nearest to it:
//     ggml's last step re-quantizes every element against the exact scale/min it will be
//     decoded with. The grid (step, offset, level range) is read from the block's bytes.
//  2. The RMS error on unit-variance data is about step/sqrt(12) (uniform rounding error),
//     with step = range/levels for the block's range: for 16 samples (Q2_K, Q3_K, Q6_K)
//     the range is ~3.5 sigma, for 32 samples (Q4_K, Q5_K) ~4 sigma, so Q2_K ~0.29 (3
//     steps), Q3_K ~0.13 (symmetric, 8 levels over +-amax with amax ~1.8), Q4_K ~0.075,
//     Q5_K ~0.036, Q6_K ~0.016. The bounds in RmsErrorOnGaussianDataMatchesTheStepSize allow ~15% above that; the
//     values measured on this input are in the comments there.

struct Grid {
    float step, offset;  // level(q) = step*q - offset
    int qmin, qmax;
};

int sub_size(GgmlType type) { return type == GgmlType::Q4_K || type == GgmlType::Q5_K ? 32 : 16; }

Grid sub_block_grid(GgmlType type, const uint8_t* blk, int sub) {
    switch (type) {
        case GgmlType::Q2_K: {
            const float d = fp16_to_fp32(get_u16(blk + 80)), dmin = fp16_to_fp32(get_u16(blk + 82));
            return {d * static_cast<float>(blk[sub] & 0xF), dmin * static_cast<float>(blk[sub] >> 4), 0, 3};
        }
        case GgmlType::Q3_K: {
            const uint8_t* s = blk + 96;
            const int low = sub < 8 ? (s[sub] & 0xF) : (s[sub - 8] >> 4);
            const int high = (s[8 + sub % 4] >> (2 * (sub / 4))) & 3;
            return {fp16_to_fp32(get_u16(blk + 108)) * static_cast<float>((low | (high << 4)) - 32), 0.0f, -4, 3};
        }
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: {
            const uint8_t* s = blk + 4;
            int sc, m;
            if (sub < 4) {
                sc = s[sub] & 63;
                m = s[sub + 4] & 63;
            } else {
                sc = (s[sub + 4] & 0xF) | ((s[sub - 4] >> 6) << 4);
                m = (s[sub + 4] >> 4) | ((s[sub] >> 6) << 4);
            }
            const float d = fp16_to_fp32(get_u16(blk)), dmin = fp16_to_fp32(get_u16(blk + 2));
            return {d * static_cast<float>(sc), dmin * static_cast<float>(m), 0, type == GgmlType::Q4_K ? 15 : 31};
        }
        case GgmlType::Q6_K:
            return {fp16_to_fp32(get_u16(blk + 208)) * static_cast<float>(static_cast<int8_t>(blk[192 + sub])), 0.0f,
                    -32, 31};
        default: return {0, 0, 0, 0};
    }
}

TEST(QuantRoundTrip, KQuantsDecodeToTheNearestLevelOfTheirGrid) {
    for (GgmlType type : {GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K}) {
        const auto block_bytes = ggml_row_bytes(type, 256);
        const int sub = sub_size(type);
        for (Dist dist : testing::kAllDists) {
            const auto x = make_row(dist, kN, 300 + static_cast<uint32_t>(dist));
            std::vector<uint8_t> bytes;
            const auto y = round_trip(type, x, &bytes);
            for (int64_t i = 0; i < kN; ++i) {
                const uint8_t* blk = bytes.data() + (i / 256) * block_bytes;
                const Grid g = sub_block_grid(type, blk, static_cast<int>(i % 256) / sub);
                float nearest = INFINITY;
                for (int q = g.qmin; q <= g.qmax; ++q) {
                    nearest = std::min(nearest, std::fabs(x[i] - (g.step * static_cast<float>(q) - g.offset)));
                }
                const float slack = 1e-5f * (std::fabs(g.step) * 32 + std::fabs(g.offset) + std::fabs(x[i])) + 1e-12f;
                ASSERT_LE(std::fabs(x[i] - y[i]), nearest + slack)
                    << ggml_type_name(type) << " dist " << static_cast<int>(dist) << " element " << i;
            }
        }
    }
}

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) sum += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    return std::sqrt(sum / static_cast<double>(x.size()));
}

TEST(QuantRoundTrip, RmsErrorOnGaussianDataMatchesTheStepSize) {
    const auto x = make_row(Dist::Gaussian, 64 * 256, 42);  // sigma ~ 1
    const struct {
        GgmlType type;
        double bound;
    } cases[] = {
        // measured: Q2_K 0.287, Q3_K 0.145, Q4_K 0.069, Q5_K 0.035, Q6_K 0.017, Q4_0 0.081,
        // Q4_1 0.075, Q5_0 0.040, Q5_1 0.036, Q8_0 0.0050, Q8_K 0.0062
        {GgmlType::Q2_K, 0.33},   {GgmlType::Q3_K, 0.165},  {GgmlType::Q4_K, 0.08},  {GgmlType::Q5_K, 0.04},
        {GgmlType::Q6_K, 0.02},   {GgmlType::Q4_0, 0.093},  {GgmlType::Q4_1, 0.087}, {GgmlType::Q5_0, 0.047},
        {GgmlType::Q5_1, 0.042},  {GgmlType::Q8_0, 0.0058}, {GgmlType::Q8_K, 0.0072},
    };
    double previous_k = 1.0;
    for (const auto& c : cases) {
        const double rms = rms_error(x, round_trip(c.type, x));
        EXPECT_LT(rms, c.bound) << ggml_type_name(c.type);
        EXPECT_GT(rms, c.bound / 10) << ggml_type_name(c.type) << ": suspiciously exact";
        if (c.type == GgmlType::Q2_K || c.type == GgmlType::Q3_K || c.type == GgmlType::Q4_K ||
            c.type == GgmlType::Q5_K || c.type == GgmlType::Q6_K) {
            EXPECT_LT(rms, previous_k) << ggml_type_name(c.type) << " should beat the format with one bit less";
            previous_k = rms;
        }
    }
}

TEST(QuantRoundTrip, AllZeroInputEncodesZeros) {
    const std::vector<float> zeros(256, 0.0f);
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                          GgmlType::Q8_1, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K,
                          GgmlType::Q6_K, GgmlType::Q8_K, GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        for (float v : round_trip(type, zeros)) ASSERT_EQ(v, 0.0f) << ggml_type_name(type);
    }
}

// ---- exact round trips: blocks whose decoded values re-encode to the same bytes.

std::vector<uint8_t> reencode(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n, bool reference = false) {
    std::vector<float> values(static_cast<size_t>(n));
    dequantize_row(type, bytes.data(), values.data(), n);
    auto again = row_buffer(type, n);
    if (reference) {
        quantize_row_reference(type, values.data(), again.data(), n);
    } else {
        quantize_row(type, values.data(), again.data(), n);
    }
    return again;
}

TEST(QuantRoundTrip, Q8_0BlockWithFullScaleQuantReencodesExactly) {
    // With some |q| = 127, amax = 127*d exactly, so the re-derived scale is d again and
    // every q*d maps back to q (the multiplier error is far below half a step).
    std::vector<uint8_t> b(68);
    testing::put_u16(b, 0, 0x3A66);   // d = 0.7998046875
    testing::put_u16(b, 34, 0x1C00);  // d = 2^-8
    for (int j = 0; j < 32; ++j) {
        b[2 + j] = static_cast<uint8_t>(static_cast<int8_t>((j * 37) % 255 - 127));
        b[36 + j] = static_cast<uint8_t>(static_cast<int8_t>(j % 2 ? -(j * 4) : j * 3));
    }
    b[2 + 5] = static_cast<uint8_t>(static_cast<int8_t>(-127));
    b[36 + 9] = 127;
    EXPECT_EQ(reencode(GgmlType::Q8_0, b, 64), b);
    EXPECT_EQ(reencode(GgmlType::Q8_0, b, 64, true), b);
}

TEST(QuantRoundTrip, LegacyBlocksWithExtremeQuantsReencodeExactly) {
    // Q4_0 / Q5_0: a quant at 0 (value -8d / -16d) is the element of largest magnitude, so
    // max/-8 (max/-16) gives back d. Q4_1 / Q5_1: quants 0 and 15 (31) present, with d and m
    // chosen so that all the arithmetic is exact.
    std::vector<uint8_t> q4_0(18);
    testing::put_u16(q4_0, 0, 0xB800);  // d = -0.5
    for (int j = 0; j < 16; ++j) q4_0[2 + j] = static_cast<uint8_t>((j * 7 + 3) % 16 | ((j * 5 + 1) % 16) << 4);
    q4_0[2 + 4] = 0x30;  // a zero nibble
    EXPECT_EQ(reencode(GgmlType::Q4_0, q4_0, 32), q4_0);

    std::vector<uint8_t> q5_0(22);
    testing::put_u16(q5_0, 0, 0x3400);  // d = 0.25
    const uint8_t qh[4] = {0x5A, 0xC3, 0x0F, 0x71};
    for (int i = 0; i < 4; ++i) q5_0[2 + i] = qh[i];
    for (int j = 0; j < 16; ++j) q5_0[6 + j] = static_cast<uint8_t>((j * 11 + 5) % 256);
    q5_0[6 + 2] &= 0xF0;  // element 2: low nibble 0 and (qh bit 2 clear) -> q = 0
    q5_0[2] &= static_cast<uint8_t>(~0x04);
    EXPECT_EQ(reencode(GgmlType::Q5_0, q5_0, 32), q5_0);

    std::vector<uint8_t> q4_1(20);
    testing::put_u16(q4_1, 0, 0x3800);  // d = 0.5
    testing::put_u16(q4_1, 2, 0xC000);  // m = -2
    for (int j = 0; j < 16; ++j) q4_1[4 + j] = static_cast<uint8_t>((j * 3) % 16 | ((15 - j) << 4));
    EXPECT_EQ(reencode(GgmlType::Q4_1, q4_1, 32), q4_1);  // has q = 0 (j=0) and 15 (j=0 high)

    std::vector<uint8_t> q5_1(24);
    testing::put_u16(q5_1, 0, 0x3400);  // d = 0.25
    testing::put_u16(q5_1, 2, 0xC400);  // m = -4
    const uint8_t qh1[4] = {0x00, 0xFF, 0x00, 0x80};  // element 31 gets the high bit
    for (int i = 0; i < 4; ++i) q5_1[4 + i] = qh1[i];
    for (int j = 0; j < 16; ++j) q5_1[8 + j] = static_cast<uint8_t>((j * 5) % 16 | ((j * 9) % 16) << 4);
    q5_1[8 + 15] = static_cast<uint8_t>(q5_1[8 + 15] | 0xF0);  // element 31 = 15 | 16 = 31; element 0 = 0
    EXPECT_EQ(reencode(GgmlType::Q5_1, q5_1, 32), q5_1);
}

TEST(QuantRoundTrip, Q8_KBlockWithPowerOfTwoScaleReencodesExactly) {
    // d = -0.25 and a largest-magnitude quant of -127: max = 31.75, iscale = -127/31.75 = -4,
    // 1/iscale = -0.25, and -4 * (q * -0.25) = q exactly. bsums must be recomputed too.
    std::vector<float> values(256);
    for (int k = 0; k < 256; ++k) values[k] = static_cast<float>((k * 29) % 255 - 127) * -0.25f;
    auto bytes = row_buffer(GgmlType::Q8_K, 256);
    quantize_row(GgmlType::Q8_K, values.data(), bytes.data(), 256);
    EXPECT_EQ(reencode(GgmlType::Q8_K, bytes, 256), bytes);
    float d;
    std::memcpy(&d, bytes.data(), 4);
    EXPECT_EQ(d, -0.25f);
    for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += static_cast<int8_t>(bytes[4 + 16 * j + l]);
        EXPECT_EQ(static_cast<int16_t>(bytes[260 + 2 * j] | (bytes[261 + 2 * j] << 8)), sum) << "bsums[" << j << "]";
    }
}

TEST(QuantRoundTrip, QuantizationIsDeterministicAndRowsAreIndependent) {
    // Quantizing a two-block row equals quantizing each block alone.
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q3_K, GgmlType::Q5_1}) {
        const auto x = make_row(Dist::Outliers, 512, 9);
        auto whole = row_buffer(type, 512);
        quantize_row(type, x.data(), whole.data(), 512);
        auto parts = row_buffer(type, 512);
        const auto half = ggml_row_bytes(type, 256);
        quantize_row(type, x.data(), parts.data(), 256);
        quantize_row(type, x.data() + 256, parts.data() + half, 256);
        EXPECT_EQ(whole, parts) << ggml_type_name(type);
    }
}

// ---- golden values from ggml itself.
// Produced by ggml's own C code (ggml-quants.c quantize_row_*_ref and dequantize_row_*,
// ggml-cpu's x86 AVX2 quantize_row_q8_0/q8_1, quantize_row_q8_K and the scalar
// ggml_vec_dot_*_generic), compiled with GCC 12 -O2 (no FMA contraction), on the portable
// inputs of quant_test_util.h. A single differently selected level changes a hash.

// FNV-1a of the encodings of make_row(dist, 65536, 1000 + dist) for every dist of
// kAllDists (256 super-blocks each: rare search outcomes, e.g. the last trial scale of
// Q4_K winning in ~0.4% of blocks, are covered). `reference`: quantize_row_reference (what
// llama-quantize writes); otherwise quantize_row (activation encodings). Q8_0/Q8_1 differ
// between the two only on HalfTies, where every x*127/amax is a tie.
struct GoldenEncoding {
    GgmlType type;
    bool reference;
    uint64_t hashes[7];
};

const GoldenEncoding kGoldenEncodings[] = {
    {GgmlType::Q4_0, true, {0x47d11dc3bc966aafull, 0x9cefa6fc66e8f4a7ull, 0x4b1c4f1c9f236262ull, 0xe94ffc04dff39253ull, 0xfad7b7c3ab97fac6ull, 0x6a8ebf2ddbc35aa9ull, 0xc168b73292e7aea0ull}},
    {GgmlType::Q4_1, true, {0xf0e8c4c520ed9957ull, 0xf624e81d23bf4f01ull, 0xbb3d3f90e4e6ddfdull, 0x55fe7097f74cbb59ull, 0xbefde3c8eab0abbfull, 0x13aa07e9d39be629ull, 0x34fff49fe2cef69dull}},
    {GgmlType::Q5_0, true, {0x51d49aa9e78b110aull, 0x414362d2caff0101ull, 0x838695e74743ba7eull, 0xa9bf3b27c2ec37e4ull, 0x5baee8f5e8f3e14aull, 0x83ce39beb5f25447ull, 0x26c406e3521ec532ull}},
    {GgmlType::Q5_1, true, {0x0194b65973a3e2a7ull, 0x29a9717e250215aaull, 0x647c971b46eda290ull, 0xc1c2907664816ae7ull, 0x7f4df217002ad27bull, 0x77e10a3547329184ull, 0xff89d68b8bafd8acull}},
    {GgmlType::Q8_0, true, {0x654985d463a0095dull, 0x892eeaefd2537ea6ull, 0xbd587f796c59e541ull, 0x574bf9b3b27923dcull, 0x10af3e911d1068f9ull, 0xe76af1b64ad53ae5ull, 0xa3bfc56aef817dbeull}},
    {GgmlType::Q8_1, true, {0x386fbabb5bba7003ull, 0x909071caf21d0635ull, 0xe96fe0d7d8e43f93ull, 0x4ae243aff22c0af1ull, 0xa3020d736f67f3e7ull, 0xb2c201d5eb944f1cull, 0xea82aaf6cd2b9d70ull}},
    {GgmlType::Q2_K, true, {0x98a7927de229e538ull, 0x8fc89befff97398bull, 0x26a65ce2783a1dfaull, 0x39772d33a3489b97ull, 0x7233d1d5135bd519ull, 0xf7d2f7a95b91b5b4ull, 0x752fd0d85b90d6e7ull}},
    {GgmlType::Q3_K, true, {0x6d7dcef81e805d73ull, 0x0e849ecea4885661ull, 0x04d6a2efdd3715e7ull, 0xdcb106b8c29f0608ull, 0x532f256a292b3a31ull, 0x469d2ff6a997b6b4ull, 0x40cfd047dd78a9f1ull}},
    {GgmlType::Q4_K, true, {0x9515435460f8a025ull, 0x84f4623fa31416c9ull, 0xd2edf7cea0301813ull, 0x0de4795101bc1a38ull, 0x5182b7d44de02d0eull, 0xdaa60f2d2be822e1ull, 0x268a208322e45900ull}},
    {GgmlType::Q5_K, true, {0xcb0bc97287523a63ull, 0xaf3963a200bc16a1ull, 0x985fd1b96757c459ull, 0x1e1dce68792d53d0ull, 0xe07a6815a4d0c47dull, 0x12948bb504c491ddull, 0x6bda2c35eee22841ull}},
    {GgmlType::Q6_K, true, {0xff8cce9fad062ae0ull, 0x82cc328b235e5beaull, 0x6f7a1cacb89b240dull, 0xdddedd314dc060a1ull, 0x3faf31b2cbb58424ull, 0xa7bcbbc273bd4a5dull, 0x5a0a5ec04962dc98ull}},
    // IQ4_NL / IQ4_XS: ggml's quantize_iq4_nl / quantize_iq4_xs with no importance matrix.
    {GgmlType::IQ4_NL, true, {0xfde2bcd86b779d9full, 0x5e8f32e27791e2bdull, 0x00d11c2500c0bba6ull, 0x90c6d120cca2df17ull, 0x97240be99128e4d3ull, 0x43dcafaf1add3a2bull, 0x0de5aad12c3009c9ull}},
    {GgmlType::IQ4_XS, true, {0xf7a3574b38c51784ull, 0xe6e7290db04ac957ull, 0x83d769021c0a2d7dull, 0x242588f37de38daaull, 0x0d50763c73fba62aull, 0x6045200d81fbf000ull, 0x72407a4f045556b2ull}},
    {GgmlType::Q8_0, false, {0xac7ccdd5031ac4deull, 0x5a5e4465ff30263full, 0xbd587f796c59e541ull, 0x574bf9b3b27923dcull, 0x10af3e911d1068f9ull, 0xe76af1b64ad53ae5ull, 0x28c3295f5879f0c1ull}},
    {GgmlType::Q8_1, false, {0x56f257f1cccb4a72ull, 0xb39e6de1a475dc1aull, 0xe96fe0d7d8e43f93ull, 0x4ae243aff22c0af1ull, 0xa3020d736f67f3e7ull, 0xb2c201d5eb944f1cull, 0xa2b051779475bd93ull}},
    {GgmlType::Q8_K, false, {0x055f3632302bb295ull, 0x69621f48b5830d2eull, 0x3b05948ccf5d1593ull, 0x497ce873fde01a78ull, 0x13c633a166d86fd7ull, 0xaec1f741f80fe351ull, 0xfc29673e632fb6a1ull}},
};

TEST(QuantGolden, EncodingsMatchGgmlByteForByte) {
    constexpr int64_t n = 65536;
    for (const auto& golden : kGoldenEncodings) {
        for (int k = 0; k < 7; ++k) {
            const Dist dist = testing::kAllDists[k];
            const auto x = make_row(dist, n, 1000 + static_cast<uint32_t>(dist));
            auto bytes = row_buffer(golden.type, n);
            if (golden.reference) {
                quantize_row_reference(golden.type, x.data(), bytes.data(), n);
            } else {
                quantize_row(golden.type, x.data(), bytes.data(), n);
            }
            EXPECT_EQ(testing::fnv1a(bytes.data(), bytes.size()), golden.hashes[k])
                << ggml_type_name(golden.type) << (golden.reference ? " (reference)" : " (activation)") << " dist "
                << k;
        }
    }
}

// For each weight type: w = reference encoding of make_row(Gaussian, 1024, 1000), x =
// activation encoding of make_row(Outliers, 1024, 1002). FNV-1a of dequantize(w) as float
// bytes, and the bits of ggml's scalar vec_dot result.
struct GoldenDot {
    GgmlType type;
    uint64_t dequantized_hash;
    uint32_t dot_bits;
};

const GoldenDot kGoldenDots[] = {
    {GgmlType::Q4_0, 0x67b6467940e74c07ull, 0x427ab7fau},  // dot = 62.6796646
    {GgmlType::Q4_1, 0x67ad2c3a5ad23132ull, 0x427a8dd5u},  // dot = 62.6385078
    {GgmlType::Q5_0, 0x6eeaa60657bdb0f0ull, 0x425448ffu},  // dot = 53.0712852
    {GgmlType::Q5_1, 0xd6cdce03e8461705ull, 0x4280de44u},  // dot = 64.4341125
    {GgmlType::Q8_0, 0x06adf2b1929951e3ull, 0x42634e52u},  // dot = 56.8264847
    {GgmlType::Q2_K, 0xa60c6274d859139bull, 0x428e6f72u},  // dot = 71.2176666
    {GgmlType::Q3_K, 0x4b5fc0d3a713d692ull, 0x424e67c0u},  // dot = 51.6013184
    {GgmlType::Q4_K, 0x4d6fd603e91db9dcull, 0x426eaef1u},  // dot = 59.6708412
    {GgmlType::Q5_K, 0x20b63a32b498125aull, 0x424f0936u},  // dot = 51.7589951
    {GgmlType::Q6_K, 0xbcb0a49fecd7fc78ull, 0x42668db8u},  // dot = 57.6383972
    {GgmlType::IQ4_NL, 0x431f72d3bb72868full, 0x4248e282u},  // dot = 50.221199
    {GgmlType::IQ4_XS, 0x05493369cc3a6db5ull, 0x424adc19u},  // dot = 50.7149391
};

TEST(QuantGolden, DequantizationAndDotProductsMatchGgmlBitForBit) {
    const auto w = make_row(Dist::Gaussian, 1024, 1000);
    const auto x = make_row(Dist::Outliers, 1024, 1002);
    for (const auto& golden : kGoldenDots) {
        auto wb = row_buffer(golden.type, 1024);
        auto xb = row_buffer(vec_dot_type(golden.type), 1024);
        quantize_row_reference(golden.type, w.data(), wb.data(), 1024);
        quantize_row(vec_dot_type(golden.type), x.data(), xb.data(), 1024);
        std::vector<float> values(1024);
        dequantize_row(golden.type, wb.data(), values.data(), 1024);
        EXPECT_EQ(testing::fnv1a(values.data(), values.size() * sizeof(float)), golden.dequantized_hash)
            << ggml_type_name(golden.type);
        const float dot = vec_dot(golden.type, 1024, wb.data(), xb.data());
        EXPECT_EQ(std::bit_cast<uint32_t>(dot), golden.dot_bits)
            << ggml_type_name(golden.type) << ": " << dot << " vs " << std::bit_cast<float>(golden.dot_bits);
    }
}

}  // namespace
}  // namespace inferscope
