// IQ4_NL and IQ4_XS: hand-built blocks, a reference decoder and dot product written from the
// format definitions (ggml-common.h) byte by byte, the encoder's properties (nearest level,
// error against Q4_0, re-encoding, degenerate blocks). Byte equality with ggml's encoder is
// pinned by the golden hashes in test_quant_roundtrip.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "engine/core/fp16.h"
#include "engine/formats/quant.h"
#include "quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::get_u16;
using testing::make_row;
using testing::put_u16;
using testing::row_buffer;

// kvalues_iq4nl, as listed in ggml-common.h.
constexpr int kLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
constexpr size_t kNlBytes = 18, kXsBytes = 136;

// ---- reference decoding from the definition: the value of element e of a row.

// IQ4_NL block: f16 d at 0, qs[16] at 2; element j < 16 is the low nibble of qs[j], element
// j >= 16 the high nibble of qs[j - 16].
float nl_scale(const uint8_t* blk) { return fp16_to_fp32(get_u16(blk)); }
int nibble(const uint8_t* qs, int j) { return j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4); }

// IQ4_XS block: f16 d at 0, u16 scales_h at 2, scales_l[4] at 4, qs[128] at 8; group g
// (32 elements) has the 6-bit scale (nibble g%2 of scales_l[g/2]) | (bits 2g..2g+1 of
// scales_h) << 4, offset by 32, and its 16 bytes of nibbles at qs + 16 g.
int xs_group_scale(const uint8_t* blk, int g) {
    const int low = (blk[4 + g / 2] >> (g % 2 == 0 ? 0 : 4)) & 0xF;
    const int high = (get_u16(blk + 2) >> (2 * g)) & 3;
    return low + 16 * high - 32;
}

std::vector<float> reference_decode(GgmlType type, const std::vector<uint8_t>& bytes, int64_t n) {
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t e = 0; e < n; ++e) {
        if (type == GgmlType::IQ4_NL) {
            const uint8_t* blk = bytes.data() + (e / 32) * kNlBytes;
            out[e] = nl_scale(blk) * static_cast<float>(kLevels[nibble(blk + 2, static_cast<int>(e % 32))]);
        } else {
            const uint8_t* blk = bytes.data() + (e / 256) * kXsBytes;
            const int g = static_cast<int>(e % 256) / 32;
            const float dl = fp16_to_fp32(get_u16(blk)) * static_cast<float>(xs_group_scale(blk, g));
            out[e] = dl * static_cast<float>(kLevels[nibble(blk + 8 + 16 * g, static_cast<int>(e % 32))]);
        }
    }
    return out;
}

// ggml's dot products from the definition: per 32 elements an exact integer sum of level *
// activation quant, times (weight scale * activation scale) in float, added to a float sum.
float reference_dot(GgmlType type, const std::vector<uint8_t>& w, const std::vector<uint8_t>& x, int64_t n) {
    float sum = 0.0f;
    for (int64_t group = 0; group < n / 32; ++group) {
        float scale = 0.0f;
        const uint8_t* qs = nullptr;
        const int8_t* q8 = nullptr;
        if (type == GgmlType::IQ4_NL) {  // activation: Q8_0 blocks {f16 d, int8 qs[32]}
            const uint8_t* blk = w.data() + group * kNlBytes;
            const uint8_t* xb = x.data() + group * 34;
            scale = fp16_to_fp32(get_u16(xb)) * nl_scale(blk);
            qs = blk + 2;
            q8 = reinterpret_cast<const int8_t*>(xb + 2);
        } else {  // activation: Q8_K blocks {float d, int8 qs[256], int16 bsums[16]}
            const uint8_t* blk = w.data() + (group / 8) * kXsBytes;
            const uint8_t* xb = x.data() + (group / 8) * 292;
            float dx;
            std::memcpy(&dx, xb, sizeof(dx));
            const int g = static_cast<int>(group % 8);
            scale = fp16_to_fp32(get_u16(blk)) * dx * static_cast<float>(xs_group_scale(blk, g));
            qs = blk + 8 + 16 * g;
            q8 = reinterpret_cast<const int8_t*>(xb + 4 + 32 * g);
        }
        int isum = 0;
        for (int j = 0; j < 32; ++j) isum += kLevels[nibble(qs, j)] * q8[j];
        sum += scale * static_cast<float>(isum);
    }
    return sum;
}

// Random blocks: every nibble and scale bit pattern, f16 scales of moderate size.
std::vector<uint8_t> random_blocks(GgmlType type, int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    auto bytes = row_buffer(type, n);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    const size_t block_bytes = type == GgmlType::IQ4_NL ? kNlBytes : kXsBytes;
    for (size_t off = 0; off < bytes.size(); off += block_bytes) {
        const float d = (testing::unit_float(rng) - 0.5f) * (type == GgmlType::IQ4_NL ? 0.02f : 0.002f);
        put_u16(bytes, off, fp32_to_fp16(d));
    }
    return bytes;
}

TEST(IQ4Blocks, HandBuiltIQ4_NLBlock) {
    std::vector<uint8_t> b(kNlBytes, 0x88);  // level 8 (value 1) everywhere
    put_u16(b, 0, 0x3800);                   // d = 0.5
    b[2 + 0] = 0xF0;                         // element 0: level 0 -> -63.5; element 16: level 15 -> 56.5
    b[2 + 5] = 0x7A;                         // element 5: level 10 (25) -> 12.5; element 21: level 7 (-10) -> -5
    std::vector<float> expected(32, 0.5f);
    expected[0] = -63.5f;
    expected[16] = 56.5f;
    expected[5] = 12.5f;
    expected[21] = -5.0f;
    std::vector<float> y(32);
    dequantize_row(GgmlType::IQ4_NL, b.data(), y.data(), 32);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], expected[j]) << "element " << j;
}

TEST(IQ4Blocks, HandBuiltIQ4_XSBlock) {
    std::vector<uint8_t> b(kXsBytes, 0x99);  // level 9 (value 13) everywhere
    put_u16(b, 0, 0x3400);                   // d = 0.25
    // Group scales (6 bits, minus 32): g0 = 33 -> 1, g1 = 0 -> -32, g2..g6 = 32 -> 0,
    // g7 = 63 -> 31. Low nibbles: g0 1, g1 0, g7 15, the rest 0; high bits: g0 2, g1 0,
    // g2..g6 2, g7 3.
    b[4] = 0x01;                              // g0 low 1, g1 low 0
    b[5] = 0x00;                              // g2, g3
    b[6] = 0x00;                              // g4, g5
    b[7] = 0xF0;                              // g6 low 0, g7 low 15
    put_u16(b, 2, static_cast<uint16_t>(2 | 0 << 2 | 2 << 4 | 2 << 6 | 2 << 8 | 2 << 10 | 2 << 12 | 3 << 14));
    b[8 + 16 * 1 + 3] = 0x0F;  // group 1: element 3 level 15 (113), element 19 level 0 (-127)
    std::vector<float> y(256);
    dequantize_row(GgmlType::IQ4_XS, b.data(), y.data(), 256);
    for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * 13) << j;                                // g0
    for (int j = 0; j < 32; ++j) {                                                              // g1: dl = -8
        const float expected = j == 3 ? -8.0f * 113 : (j == 19 ? -8.0f * -127 : -8.0f * 13);
        EXPECT_EQ(y[32 + j], expected) << j;
    }
    for (int j = 64; j < 224; ++j) EXPECT_EQ(y[j], 0.0f) << j;                                  // g2..g6
    for (int j = 224; j < 256; ++j) EXPECT_EQ(y[j], 7.75f * 13) << j;                           // g7: 31/4
}

TEST(IQ4Blocks, DecodingMatchesTheDefinitionOnRandomBytes) {
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        const int64_t n = 8192;
        const auto bytes = random_blocks(type, n, 7);
        std::vector<float> y(static_cast<size_t>(n));
        dequantize_row(type, bytes.data(), y.data(), n);
        const auto expected = reference_decode(type, bytes, n);
        for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], expected[i]) << ggml_type_name(type) << " element " << i;
    }
}

TEST(IQ4Blocks, DotProductMatchesTheDefinitionBitForBit) {
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        for (uint32_t seed = 0; seed < 20; ++seed) {
            const int64_t n = 256 * (1 + seed % 8);
            const auto w = random_blocks(type, n, 100 + seed);
            const auto xf = make_row(seed % 2 ? Dist::Outliers : Dist::Gaussian, n, 200 + seed);
            auto x = row_buffer(vec_dot_type(type), n);
            quantize_row(vec_dot_type(type), xf.data(), x.data(), n);
            const float dot = vec_dot(type, n, w.data(), x.data());
            const float expected = reference_dot(type, w, x, n);
            ASSERT_EQ(std::bit_cast<uint32_t>(dot), std::bit_cast<uint32_t>(expected))
                << ggml_type_name(type) << " seed " << seed << ": " << dot << " vs " << expected;
        }
    }
}

// ---- the encoder

std::vector<uint8_t> encode_row(GgmlType type, const std::vector<float>& x) {
    auto bytes = row_buffer(type, static_cast<int64_t>(x.size()));
    quantize_row(type, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
    return bytes;
}

// The decoded scale of the group holding element e (d, or d * group scale), and how far the
// scale the encoder chose the levels with can be from it: the block scale before its f16
// rounding (half an f16 ulp: 2^-11 relative, or 2^-25 absolute for f16 subnormals), times
// the group's 6-bit multiple for IQ4_XS.
struct GroupStep {
    float step, uncertainty;
};
GroupStep group_step(GgmlType type, const std::vector<uint8_t>& bytes, int64_t e) {
    const uint8_t* blk = type == GgmlType::IQ4_NL ? bytes.data() + (e / 32) * kNlBytes : bytes.data() + (e / 256) * kXsBytes;
    const float d = fp16_to_fp32(get_u16(blk));
    const float multiple =
        type == GgmlType::IQ4_NL ? 1.0f : static_cast<float>(xs_group_scale(blk, static_cast<int>(e % 256) / 32));
    return {d * multiple, std::max(std::fabs(d) * 0x1.0p-11f, 0x1.0p-25f) * std::fabs(multiple)};
}

TEST(IQ4Encoder, EveryElementDecodesToTheNearestLevelOfItsGroupScale) {
    // The levels are chosen against the scale before its f16 rounding, so each level may have
    // moved by up to 127 times that rounding: the chosen one can be worse than the nearest by
    // twice that.
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        for (Dist dist : testing::kAllDists) {
            const auto x = make_row(dist, 4096, 500 + static_cast<uint32_t>(dist));
            const auto bytes = encode_row(type, x);
            const auto y = reference_decode(type, bytes, 4096);
            for (int64_t i = 0; i < 4096; ++i) {
                const GroupStep g = group_step(type, bytes, i);
                float nearest = INFINITY;
                for (int level : kLevels) nearest = std::min(nearest, std::fabs(x[i] - g.step * static_cast<float>(level)));
                const float slack = 2 * 127 * g.uncertainty * 1.001f + 1e-6f * std::fabs(x[i]) + 1e-30f;
                ASSERT_LE(std::fabs(x[i] - y[i]), nearest + slack)
                    << ggml_type_name(type) << " dist " << static_cast<int>(dist) << " element " << i;
            }
        }
    }
}

double rms_error(GgmlType type, const std::vector<float>& x) {
    const auto bytes = encode_row(type, x);
    std::vector<float> y(x.size());
    dequantize_row(type, bytes.data(), y.data(), static_cast<int64_t>(x.size()));
    double sum = 0;
    for (size_t i = 0; i < x.size(); ++i) sum += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    return std::sqrt(sum / static_cast<double>(x.size()));
}

TEST(IQ4Encoder, BeatsQ4_0OnGaussianAndUniformData) {
    // The non-uniform levels and the scale search give a lower error than Q4_0's at the same
    // (IQ4_NL) or lower (IQ4_XS, 4.25 bits) size on bell-shaped or flat data. Not with one
    // large outlier per block: the levels have no zero, so the small elements land one step of
    // the outlier's scale away from 0, where Q4_0 rounds them to 0.
    for (Dist dist : {Dist::Gaussian, Dist::Uniform, Dist::Positive}) {
        const auto x = make_row(dist, 64 * 256, 42 + static_cast<uint32_t>(dist));
        const double q4_0 = rms_error(GgmlType::Q4_0, x);
        for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
            const double rms = rms_error(type, x);
            EXPECT_LT(rms, q4_0) << ggml_type_name(type) << " dist " << static_cast<int>(dist);
            EXPECT_GT(rms, q4_0 / 4) << ggml_type_name(type) << ": suspiciously exact";
        }
    }
    const auto gaussian = make_row(Dist::Gaussian, 64 * 256, 42);
    EXPECT_LT(rms_error(GgmlType::IQ4_NL, gaussian), 0.075);
    EXPECT_LT(rms_error(GgmlType::IQ4_XS, gaussian), 0.076);
}

TEST(IQ4Encoder, ZeroGroupsEncodeAsGgmlWritesThem) {
    // A zero group gets scale 0 and every nibble at level 8 (the first level above zero).
    // IQ4_XS: an all-zero super-block has d = -0.0 (f16 0x8000: -max_scale/32 with
    // max_scale = 0) and every 6-bit group scale at 32 (i.e. 0): scales_h = 0b10 per group.
    const std::vector<float> zeros(256, 0.0f);
    const auto nl = encode_row(GgmlType::IQ4_NL, zeros);
    for (size_t off = 0; off < nl.size(); off += kNlBytes) {
        EXPECT_EQ(get_u16(nl.data() + off), 0);
        for (size_t j = 2; j < kNlBytes; ++j) EXPECT_EQ(nl[off + j], 0x88);
    }
    const auto xs = encode_row(GgmlType::IQ4_XS, zeros);
    EXPECT_EQ(get_u16(xs.data()), 0x8000);
    EXPECT_EQ(get_u16(xs.data() + 2), 0xAAAA);
    for (int j = 4; j < 8; ++j) EXPECT_EQ(xs[j], 0);
    for (size_t j = 8; j < kXsBytes; ++j) EXPECT_EQ(xs[j], 0x88);
    std::vector<float> y(256, 1.0f);
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        dequantize_row(type, (type == GgmlType::IQ4_NL ? nl : xs).data(), y.data(), 256);
        for (float v : y) EXPECT_EQ(v, 0.0f) << ggml_type_name(type);
    }
}

TEST(IQ4Encoder, IQ4_NLBlocksWhoseExtremeIsTheLowestLevelReencodeExactly) {
    // Re-encoding decoded values: for a block whose largest-magnitude element sits at level
    // 0 (-127), the search's trial itry = 0 uses 1/d, reproduces every level, and so reaches
    // the largest possible sum(w q x)^2 / sum(w q^2) (w = x^2); its least-squares scale
    // rounds back to d. That holds in exact arithmetic; in float, a block dominated by one
    // element (Outliers: 40 among values of 0.05) has every trial within rounding of that
    // maximum, and ggml's comparison may keep another (3 % of such blocks), so it is left
    // out. Not covered either: blocks whose extreme is at level 15 (113), which no trial
    // maps exactly, and IQ4_XS, whose 6-bit group scales are re-derived from a new maximum.
    int covered = 0;
    for (Dist dist : {Dist::Gaussian, Dist::Uniform, Dist::Positive, Dist::ZeroBlocks, Dist::Discrete, Dist::HalfTies}) {
        const auto x = make_row(dist, 8192, 900 + static_cast<uint32_t>(dist));
        const auto bytes = encode_row(GgmlType::IQ4_NL, x);
        std::vector<float> y(x.size());
        dequantize_row(GgmlType::IQ4_NL, bytes.data(), y.data(), 8192);
        const auto again = encode_row(GgmlType::IQ4_NL, y);
        for (int64_t b = 0; b < 8192 / 32; ++b) {
            const uint8_t* blk = bytes.data() + b * kNlBytes;
            if (nl_scale(blk) == 0.0f) continue;
            int extreme = 0;
            for (int j = 1; j < 32; ++j) {
                if (std::abs(kLevels[nibble(blk + 2, j)]) > std::abs(kLevels[nibble(blk + 2, extreme)])) extreme = j;
            }
            if (nibble(blk + 2, extreme) != 0) continue;
            ++covered;
            ASSERT_EQ(0, std::memcmp(blk, again.data() + b * kNlBytes, kNlBytes))
                << "dist " << static_cast<int>(dist) << " block " << b;
        }
    }
    EXPECT_GT(covered, 1000);  // most blocks: the search starts from max -> -127
}

TEST(IQ4Encoder, RowsAreEncodedBlockByBlock) {
    // Each block depends on its own elements only (no row-level statistics without an
    // importance matrix): encoding a row equals encoding its blocks separately.
    const auto x = make_row(Dist::Outliers, 2048, 77);
    for (GgmlType type : {GgmlType::IQ4_NL, GgmlType::IQ4_XS}) {
        const int64_t block = ggml_type_traits(type).block_elements;
        const auto whole = encode_row(type, x);
        for (int64_t b = 0; b < 2048 / block; ++b) {
            const std::vector<float> part(x.begin() + b * block, x.begin() + (b + 1) * block);
            const auto one = encode_row(type, part);
            ASSERT_EQ(0, std::memcmp(one.data(), whole.data() + b * one.size(), one.size())) << ggml_type_name(type);
        }
    }
}

}  // namespace
}  // namespace inferscope
