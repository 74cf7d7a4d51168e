// The SIMD row dot products and activation encoders (engine/backend/cpu/kernels/row_dot.h)
// of every instruction-set family this CPU runs, against the scalar reference of
// engine/formats/quant.h:
//  * encoders: byte-for-byte equal to quantize_row, on random rows of several shapes and
//    on crafted blocks (ties, zero blocks, signed-maximum ties, denormals, overflow, inf, NaN);
//  * dot products: equal to vec_dot up to float summation order, within a bound derived
//    below, for quantized random rows and for random block bytes (every bit pattern);
//  * the tables: no null member for any weight type, and the SIMD families really provide
//    their kernels (no silent fall-back to scalar).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <time.h>
#include <utility>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/core/fp16.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"
#include "formats/quant_test_util.h"
#include "backend/row_dot_test_support.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::kAllDists;
using testing::block_elements;
using testing::encode_reference;
using testing::is_float_type;
using testing::make_row;
using testing::name_of;
using testing::row_bytes;

const auto& kWeightTypes = testing::kRowDotWeightTypes;
// The SIMD families this build has (the scalar reference aside).
const std::vector<CpuIsa> kSimdIsas = [] {
    std::vector<CpuIsa> isas;
    for (const CpuIsa isa : built_cpu_families()) {
        if (isa != CpuIsa::Scalar) isas.push_back(isa);
    }
    return isas;
}();

// Whether `isa` must have a row kernel of its own for `t`: the x86-64 families and NEON for
// every weight type, dotprod for every integer block format (sdot multiplies bytes; the float
// rows are NEON's, F16's its own FMLAL rows where the CPU has FEAT_FHM), i8mm for none (it adds batch kernels and borrows the rest from dotprod).
// NEON encodes the Q8 activations of the integer formats (dotprod and i8mm take its
// encoders); the ARM64 float rows encode with the scalar reference.
bool covers_type(CpuIsa isa, GgmlType t) {
    if (isa == CpuIsa::I8mm) return false;
    return isa != CpuIsa::Dotprod || !is_float_type(t);
}
bool has_own_encoder(CpuIsa isa, GgmlType t) {
    if (isa == CpuIsa::Neon) return !is_float_type(t);
    return isa == CpuIsa::Avx2 || isa == CpuIsa::AvxVnni || isa == CpuIsa::Avx512;
}

// ------------------------------------------------------------------ tables

TEST(RowDotKernels, NoNullMembersForAnyWeightType) {
    for (CpuIsa isa : built_cpu_families()) {
        if (!cpu_supports(isa)) {
            std::printf("[ SKIPPED  ] %s: this CPU cannot run it\n", name_of(isa).c_str());
            continue;
        }
        for (GgmlType t : kWeightTypes) {
            const RowDotKernels k = row_dot_kernels(t, isa);
            EXPECT_NE(k.dot, nullptr) << name_of(t) << " " << name_of(isa);
            EXPECT_NE(k.dot_rows, nullptr) << name_of(t) << " " << name_of(isa);
            EXPECT_NE(k.encode, nullptr) << name_of(t) << " " << name_of(isa);
            EXPECT_EQ(k.activation_type, vec_dot_type(t)) << name_of(t) << " " << name_of(isa);
        }
    }
}

TEST(RowDotKernels, EachSimdFamilyProvidesItsKernelsWhole) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) {
            std::printf("[ SKIPPED  ] %s: this CPU cannot run it\n", name_of(isa).c_str());
            continue;
        }
        if (isa == CpuIsa::Avx512 && !cpu_features().avx512vnni) {
            // The AVX-512 family needs VNNI; without it the AVX2 kernels are used.
            std::printf("[ SKIPPED  ] avx512 table: no AVX512-VNNI on this CPU\n");
            continue;
        }
        int provided = 0;
        for (GgmlType t : kWeightTypes) {
            const RowDotKernels k = row_dot_family_kernels(t, isa);
            if (!covers_type(isa, t) && k.dot == nullptr) continue;
            ++provided;
            EXPECT_NE(k.dot, nullptr) << name_of(t) << " " << name_of(isa);
            EXPECT_NE(k.dot_rows, nullptr) << name_of(t) << " " << name_of(isa);
            if (has_own_encoder(isa, t)) {
                EXPECT_NE(k.encode, nullptr) << name_of(t) << " " << name_of(isa);
            }
            EXPECT_EQ(k.activation_type, vec_dot_type(t)) << name_of(t) << " " << name_of(isa);
        }
        EXPECT_GT(provided, 0) << name_of(isa) << " provides no row kernel of its own";
    }
}

// ------------------------------------------------------------------ encoders

// The weight type whose kernels encode activations as `encoding`.
GgmlType weight_type_for_encoding(GgmlType encoding) {
    switch (encoding) {
        case GgmlType::F16: return GgmlType::F16;
        case GgmlType::BF16: return GgmlType::BF16;
        case GgmlType::Q8_0: return GgmlType::Q4_0;
        case GgmlType::Q8_1: return GgmlType::Q4_1;
        default: return GgmlType::Q4_K;
    }
}

const GgmlType kEncodings[] = {GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K};

// Special floats used to build adversarial rows.
const float kSpecial[] = {0.0f,
                          -0.0f,
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          std::bit_cast<float>(0x7FA00001u),   // NaN with a payload
                          std::bit_cast<float>(0xFFC12345u),   // negative NaN with a payload
                          std::numeric_limits<float>::max(),
                          -std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(),
                          -1e-40f,
                          1e-38f,
                          65504.0f,
                          65520.0f,   // rounds to f16 infinity
                          65519.99f,
                          0x1.0p-25f,  // f16 rounding boundaries
                          0x1.8p-25f,
                          0x1.0p-24f,
                          0x1.004p-14f,
                          1.0f + 0x1.0p-11f,  // f16 tie
                          1.0f + 0x1.8p-11f,
                          1.0f + 0x1.0p-8f,   // bf16 tie
                          1.0f + 0x1.0p-8f + 0x1.0p-23f};

struct EncodeCase {
    std::string label;
    std::vector<float> x;
};

// Rows for the encoder comparisons: every distribution of quant_test_util.h at several
// lengths, plus crafted rows.
std::vector<EncodeCase> encoder_cases(GgmlType encoding) {
    std::vector<EncodeCase> cases;
    const int64_t block = block_elements(encoding);
    std::vector<int64_t> lengths;
    if (block == 1) {
        lengths = {1, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 100, 896, 4864};
    } else if (block == 32) {
        lengths = {32, 64, 96, 160, 896, 4864};
    } else {
        lengths = {256, 768, 4864};
    }
    uint32_t seed = 1;
    for (int64_t n : lengths) {
        for (Dist d : kAllDists) cases.push_back({"dist " + std::to_string(int(d)) + " n " + std::to_string(n), make_row(d, n, seed++)});
    }
    const int64_t n = block == 1 ? 4099 : (block == 32 ? 32 * 67 : 256 * 9);
    std::mt19937 rng(12345);
    auto uniform = [&](float lo, float hi) { return lo + (hi - lo) * testing::unit_float(rng); };

    // Ties for the legacy Q8 encodings: a block maximum of +-127 (multiplier exactly 1) and
    // halves everywhere else; for Q8_K the maximum is -127 or +127 (iscale -1 or +1).
    {
        std::vector<float> x(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<int>(rng() % 253) - 126) + 0.5f;
        for (int64_t i = 0; i < n; i += 32) x[std::min<int64_t>(n - 1, i + rng() % 32)] = rng() % 2 ? 127.0f : -127.0f;
        cases.push_back({"half ties", x});
    }
    // Signed-maximum ties (Q8_K takes the first element of largest magnitude, with its sign).
    for (int variant = 0; variant < 4; ++variant) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = uniform(-1.0f, 1.0f);
        for (int64_t b = 0; b < n; b += 256 < n ? 256 : n) {
            const int64_t len = std::min<int64_t>(256, n - b);
            const float m = uniform(1.5f, 3.0f);
            const int64_t p1 = b + rng() % len, p2 = b + rng() % len;
            x[p1] = variant & 1 ? m : -m;
            x[p2] = variant & 2 ? m : -m;
        }
        cases.push_back({"signed max ties " + std::to_string(variant), x});
    }
    // Zero blocks, negative zeros, single nonzero elements.
    {
        std::vector<float> x(static_cast<size_t>(n), 0.0f);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t blk = i / std::max<int64_t>(block, 32);
            if (blk % 4 == 1) x[i] = -0.0f;
            if (blk % 4 == 2 && i % 37 == 5) x[i] = uniform(-2.0f, 2.0f);
            if (blk % 4 == 3) x[i] = uniform(-1e-3f, 1e-3f);
        }
        cases.push_back({"zeros", x});
    }
    // Tiny and huge magnitudes: denormal block maxima (the multiplier overflows), f16
    // overflow of the scale, values near FLT_MAX.
    for (float scale : {1e-39f, 1e-37f, 7.4e-37f, 7.5e-37f, 1e-30f, 1e6f, 1e10f, 1e30f, 3e38f}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = uniform(-1.0f, 1.0f) * scale;
        cases.push_back({"scale " + std::to_string(scale), x});
    }
    // Special values sprinkled over otherwise normal blocks, and blocks made only of them.
    for (int variant = 0; variant < 3; ++variant) {
        std::vector<float> x(static_cast<size_t>(n));
        for (auto& v : x) v = uniform(-3.0f, 3.0f);
        for (int64_t i = 0; i < n; ++i) {
            const bool special = variant == 2 ? (rng() % 3 == 0) : (rng() % (variant == 0 ? 61 : 7) == 0);
            if (special) x[i] = kSpecial[rng() % std::size(kSpecial)];
        }
        cases.push_back({"specials " + std::to_string(variant), x});
    }
    // Every special value in every position of a small row (float encodings).
    if (block == 1) {
        std::vector<float> x;
        for (float s : kSpecial) {
            for (int k = 0; k < 9; ++k) x.push_back(s * (k % 2 ? 1.0f : -1.0f));
        }
        for (int k = 0; k < 2000; ++k) x.push_back(std::bit_cast<float>(static_cast<uint32_t>(rng())));  // any bits
        cases.push_back({"special values and random bits", x});
    }
    return cases;
}

TEST(RowDotEncoders, BitIdenticalToQuantizeRow) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) {
            std::printf("[ SKIPPED  ] %s: this CPU cannot run it\n", name_of(isa).c_str());
            continue;
        }
        for (GgmlType encoding : kEncodings) {
            const RowDotKernels k = row_dot_kernels(weight_type_for_encoding(encoding), isa);
            ASSERT_EQ(k.activation_type, encoding);
            int rows = 0;
            for (const EncodeCase& c : encoder_cases(encoding)) {
                const auto n = static_cast<int64_t>(c.x.size());
                const std::vector<uint8_t> want = encode_reference(encoding, c.x);
                std::vector<uint8_t> got(want.size() + 64, 0xA5);  // guard bytes after the row
                k.encode(c.x.data(), got.data(), n);
                size_t first_diff = want.size();
                for (size_t i = 0; i < want.size(); ++i) {
                    if (want[i] != got[i]) {
                        first_diff = i;
                        break;
                    }
                }
                EXPECT_EQ(first_diff, want.size()) << name_of(isa) << " " << name_of(encoding) << " " << c.label
                                                   << ": first differing byte " << first_diff << " (block "
                                                   << first_diff / ggml_type_traits(encoding).block_bytes << ")";
                for (size_t i = want.size(); i < got.size(); ++i) ASSERT_EQ(got[i], 0xA5) << "wrote past the row";
                ++rows;
            }
            EXPECT_GT(rows, 30);
        }
    }
}

// Random activation rows of every length the engine sees, from many seeds (cheap, many rows).
TEST(RowDotEncoders, BitIdenticalOnManyRandomRows) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) continue;
        for (GgmlType encoding : kEncodings) {
            const RowDotKernels k = row_dot_kernels(weight_type_for_encoding(encoding), isa);
            const int64_t block = std::max<int64_t>(block_elements(encoding), 32);
            std::mt19937 rng(99);
            for (int r = 0; r < 300; ++r) {
                const int64_t n = block * (1 + static_cast<int64_t>(rng() % (block == 256 ? 20 : 160)));
                const Dist d = kAllDists[rng() % std::size(kAllDists)];
                std::vector<float> x = make_row(d, n, rng());
                const float scale = std::ldexp(1.0f, static_cast<int>(rng() % 40) - 20);
                for (auto& v : x) v *= scale;
                const std::vector<uint8_t> want = encode_reference(encoding, x);
                std::vector<uint8_t> got(want.size());
                k.encode(x.data(), got.data(), n);
                ASSERT_EQ(want, got) << name_of(isa) << " " << name_of(encoding) << " row " << r;
            }
        }
    }
}

// ------------------------------------------------------------------ dot products

// Offsets of the f16 scale fields of each block (for random-byte rows).
std::vector<int> f16_fields(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0: case GgmlType::Q5_0: case GgmlType::Q8_0: return {0};
        case GgmlType::IQ4_NL: case GgmlType::IQ4_XS: return {0};
        case GgmlType::Q4_1: case GgmlType::Q5_1: case GgmlType::Q8_1: return {0, 2};
        case GgmlType::Q2_K: return {80, 82};
        case GgmlType::Q3_K: return {108};
        case GgmlType::Q4_K: case GgmlType::Q5_K: return {0, 2};
        case GgmlType::Q6_K: return {208};
        default: return {};
    }
}

// The byte range of each block that holds the quants of a type whose elements are
// d*q + offset (Q4_1, Q5_1) or d*sc*q - dmin*m (Q2_K, Q4_K, Q5_K); zeroing it leaves the
// offsets. {0, 0} for types without an offset.
std::pair<int, int> quant_bytes_of_min_types(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_1: return {4, 20};
        case GgmlType::Q5_1: return {4, 24};
        case GgmlType::Q2_K: return {16, 80};
        case GgmlType::Q4_K: return {16, 144};
        case GgmlType::Q5_K: return {16, 176};
        default: return {0, 0};
    }
}

// Random bytes for every block of a quantized row, with sane scales (random sign, magnitude
// 2^-12 .. 1); Q8_K rows get a random float scale and consistent bsums, Q8_1 rows a
// consistent s. Q8_0 quants avoid -128 on request (see the note on Q8_0 x Q8_0 in
// row_dot_ymm.h: no quantizer writes a -128 weight).
std::vector<uint8_t> random_blocks(GgmlType t, int64_t n, std::mt19937& rng, bool avoid_minus_128 = false) {
    std::vector<uint8_t> bytes(row_bytes(t, n));
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    const auto& traits = ggml_type_traits(t);
    const int64_t blocks = n / traits.block_elements;
    for (int64_t b = 0; b < blocks; ++b) {
        uint8_t* blk = bytes.data() + b * traits.block_bytes;
        auto scale = [&]() {
            const float mag = std::ldexp(1.0f + testing::unit_float(rng), -static_cast<int>(rng() % 12) - 1);
            return rng() % 2 ? mag : -mag;
        };
        if (t == GgmlType::Q8_K) {
            const float d = scale() * 0.01f;
            std::memcpy(blk, &d, 4);
            for (int j = 0; j < 16; ++j) {
                int sum = 0;
                for (int l = 0; l < 16; ++l) sum += static_cast<int8_t>(blk[4 + 16 * j + l]);
                const auto s = static_cast<int16_t>(sum);
                std::memcpy(blk + 260 + 2 * j, &s, 2);
            }
            continue;
        }
        for (int off : f16_fields(t)) testing::put_u16(bytes, static_cast<size_t>(blk - bytes.data() + off), fp32_to_fp16(scale()));
        if (avoid_minus_128 && (t == GgmlType::Q8_0 || t == GgmlType::Q8_1)) {
            const int first = t == GgmlType::Q8_0 ? 2 : 4;
            for (int j = first; j < first + 32; ++j) {
                if (blk[j] == 0x80) blk[j] = 0x81;
            }
        }
        if (t == GgmlType::Q8_1) {  // s = d * sum(q), as the encoder writes it
            int sum = 0;
            for (int j = 4; j < 36; ++j) sum += static_cast<int8_t>(blk[j]);
            testing::put_u16(bytes, static_cast<size_t>(blk - bytes.data() + 2),
                             fp32_to_fp16(fp16_to_fp32(testing::get_u16(blk)) * static_cast<float>(sum)));
        }
    }
    return bytes;
}

// S = sum_i |x_i| * (|w_i - off_i| + |off_i|) in double: a bound on the magnitudes of every
// partial sum either implementation forms (off_i: the min term of element i, 0 for
// symmetric types), from the decoded rows; and the dot of the decoded rows in double (for
// the report: how far each implementation is from it).
struct Magnitude {
    double s = 0.0;
    double exact = 0.0;
};
Magnitude magnitude(GgmlType t, int64_t n, const std::vector<uint8_t>& w, const std::vector<uint8_t>& x) {
    std::vector<float> wv(static_cast<size_t>(n)), xv(static_cast<size_t>(n)), off(static_cast<size_t>(n), 0.0f);
    dequantize_row(t, w.data(), wv.data(), n);
    dequantize_row(vec_dot_type(t), x.data(), xv.data(), n);
    const auto [lo, hi] = quant_bytes_of_min_types(t);
    if (hi > lo) {
        std::vector<uint8_t> zeroed = w;
        const auto& traits = ggml_type_traits(t);
        for (int64_t b = 0; b < n / traits.block_elements; ++b) {
            std::fill(zeroed.begin() + b * traits.block_bytes + lo, zeroed.begin() + b * traits.block_bytes + hi, 0);
        }
        dequantize_row(t, zeroed.data(), off.data(), n);
    }
    Magnitude m;
    for (int64_t i = 0; i < n; ++i) {
        const double wi = wv[i], xi = xv[i], oi = off[i];
        m.s += std::fabs(xi) * (std::fabs(wi - oi) + std::fabs(oi));
        m.exact += wi * xi;
    }
    return m;
}

// The bound on |simd - reference|. Integer block sums are exact in both; what differs is
// float rounding: each block's term picks up a few relative roundings of 2^-24 (scale
// products, int -> float), and the running sums add one rounding per addition of at most S
// (first order). The reference's longest running sum has `blocks` additions (F16/BF16:
// none, it accumulates in double); the SIMD kernels have fewer (several lanes), at most
// `blocks` for quantized types and n/8 + log2 terms for F16/BF16. So
//   |simd - ref| <= (2 * blocks + 24) * 2^-24 * S   (quantized)
//   |simd - ref| <= (n / 8 + 24) * 2^-24 * S        (F16, BF16)
// plus an absolute term for underflow in scale products of tiny blocks.
double tolerance(GgmlType t, int64_t n, double s) {
    // (IQ4_XS's reference adds one term per 32-element group, eight per block.)
    const int64_t terms = t == GgmlType::IQ4_XS ? n / 32 : n / block_elements(t);
    const double chain = is_float_type(t) ? static_cast<double>(n / 8 + 24) : static_cast<double>(2 * terms + 24);
    return chain * 0x1.0p-24 * s + 1e-37 * static_cast<double>(n);
}

void check_dot(CpuIsa isa, GgmlType t, int64_t n, const std::vector<uint8_t>& w, const std::vector<uint8_t>& x,
               const std::string& label) {
    const RowDotKernels k = row_dot_kernels(t, isa);
    const float want = vec_dot(t, n, w.data(), x.data());
    const float got = k.dot(n, w.data(), x.data());
    const Magnitude m = magnitude(t, n, w, x);
    const double tol = tolerance(t, n, m.s);
    const double err = std::fabs(static_cast<double>(got) - static_cast<double>(want));
    EXPECT_LE(err, tol) << name_of(isa) << " " << name_of(t) << " n=" << n << " " << label << ": simd " << got
                        << " reference " << want << " S " << m.s;
}

std::vector<int64_t> dot_lengths(GgmlType t) {
    if (is_float_type(t)) return {1, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 896, 4864};
    if (block_elements(t) == 32) return {32, 64, 96, 128, 160, 224, 288, 896, 4864};
    return {256, 512, 768, 1280, 4864};
}

TEST(RowDotProducts, MatchScalarReferenceOnQuantizedRandomRows) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) {
            std::printf("[ SKIPPED  ] %s: this CPU cannot run it\n", name_of(isa).c_str());
            continue;
        }
        for (GgmlType t : kWeightTypes) {
            const GgmlType at = vec_dot_type(t);
            uint32_t seed = 1000;
            for (int64_t n : dot_lengths(t)) {
                for (Dist wd : {Dist::Gaussian, Dist::Outliers, Dist::Positive, Dist::ZeroBlocks, Dist::Discrete}) {
                    for (Dist xd : {Dist::Gaussian, Dist::Uniform, Dist::Outliers, Dist::ZeroBlocks, Dist::HalfTies}) {
                        const std::vector<float> wf = make_row(wd, n, seed++);
                        const std::vector<float> xf = make_row(xd, n, seed++);
                        const std::vector<uint8_t> w = encode_reference(t, wf);
                        const std::vector<uint8_t> x = encode_reference(at, xf);
                        check_dot(isa, t, n, w, x, "dists " + std::to_string(int(wd)) + "/" + std::to_string(int(xd)));
                    }
                }
            }
        }
    }
}

TEST(RowDotProducts, MatchScalarReferenceOnRandomBlockBytes) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) continue;
        for (GgmlType t : kWeightTypes) {
            if (is_float_type(t)) continue;
            const GgmlType at = vec_dot_type(t);
            std::mt19937 rng(static_cast<uint32_t>(t) * 7919u + 17u);
            for (int64_t n : dot_lengths(t)) {
                for (int rep = 0; rep < 6; ++rep) {
                    // Q8_0 x Q8_0 on avx2 and avxvnni relies on weights != -128 (see row_dot_ymm.h).
                    const bool avoid = t == GgmlType::Q8_0 && (isa == CpuIsa::Avx2 || isa == CpuIsa::AvxVnni);
                    const std::vector<uint8_t> w = random_blocks(t, n, rng, avoid);
                    const std::vector<uint8_t> x = random_blocks(at, n, rng);
                    check_dot(isa, t, n, w, x, "random bytes rep " + std::to_string(rep));
                }
            }
        }
    }
}

// Float rows with random bit patterns in a sane exponent range (all mantissas, signs).
TEST(RowDotProducts, MatchScalarReferenceOnRandomHalfBits) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) continue;
        for (GgmlType t : {GgmlType::F16, GgmlType::BF16}) {
            std::mt19937 rng(5);
            for (int64_t n : dot_lengths(t)) {
                for (int rep = 0; rep < 8; ++rep) {
                    std::vector<float> wf(static_cast<size_t>(n)), xf(static_cast<size_t>(n));
                    for (auto* row : {&wf, &xf}) {
                        for (auto& v : *row) {
                            const float mag = std::ldexp(1.0f + testing::unit_float(rng), static_cast<int>(rng() % 20) - 12);
                            v = rng() % 2 ? mag : -mag;
                        }
                    }
                    check_dot(isa, t, n, encode_reference(t, wf), encode_reference(t, xf), "random halves");
                }
            }
        }
    }
}

// Activation rows with infinities and NaNs: the encodings (identical bytes) can hold
// quants of -128 with a finite scale (a NaN that the ggml max scan skips), and NaN or
// infinite scales. Where the reference's result is finite, the SIMD one must match it within
// the usual bound; where it is NaN, so must the SIMD one be.
TEST(RowDotProducts, NonFiniteActivationsMatchReference) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) continue;
        for (GgmlType t : kWeightTypes) {
            const int64_t n = block_elements(t) == 256 ? 1280 : 896;
            const RowDotKernels k = row_dot_kernels(t, isa);
            std::mt19937 rng(31);
            int finite = 0;
            for (int rep = 0; rep < 40; ++rep) {
                std::vector<float> xf = make_row(Dist::Gaussian, n, 900 + rep);
                const int specials = 1 + rep % 3;
                for (int j = 0; j < specials; ++j) {
                    const float v = (rng() % 3 == 0) ? (rng() % 2 ? inf : -inf) : nan;
                    xf[rng() % n] = v;
                }
                const std::vector<uint8_t> x = encode_reference(k.activation_type, xf);
                std::vector<uint8_t> x_simd(x.size());
                k.encode(xf.data(), x_simd.data(), n);
                ASSERT_EQ(x, x_simd) << name_of(isa) << " " << name_of(t);
                const std::vector<uint8_t> w = encode_reference(t, make_row(Dist::Gaussian, n, 1900 + rep));
                const float want = vec_dot(t, n, w.data(), x.data());
                const float got = k.dot(n, w.data(), x.data());
                if (std::isnan(want)) {
                    EXPECT_TRUE(std::isnan(got)) << name_of(isa) << " " << name_of(t) << " rep " << rep << ": " << got;
                } else if (std::isfinite(want)) {
                    const Magnitude m = magnitude(t, n, w, x);
                    if (std::isfinite(m.s)) {
                        ++finite;
                        EXPECT_LE(std::fabs(static_cast<double>(got) - want), tolerance(t, n, m.s))
                            << name_of(isa) << " " << name_of(t) << " rep " << rep << ": " << got << " vs " << want;
                    }
                }
            }
            if (!is_float_type(t)) {
                EXPECT_GT(finite, 0) << name_of(t) << ": no finite case exercised";
            }
        }
    }
}

// Activations encoded by the SIMD encoder give the same dot as the scalar-encoded ones (the
// bytes are identical), and a whole 0.5B-model shaped product agrees row by row.
TEST(RowDotProducts, EncodeThenDotAgreesWithReferencePipeline) {
    for (CpuIsa isa : kSimdIsas) {
        if (!cpu_supports(isa)) continue;
        for (GgmlType t : kWeightTypes) {
            const int64_t n = 4864;
            const int rows = 16;
            const RowDotKernels k = row_dot_kernels(t, isa);
            const std::vector<float> xf = make_row(Dist::Gaussian, n, 4242);
            std::vector<uint8_t> x(row_bytes(k.activation_type, n));
            k.encode(xf.data(), x.data(), n);
            ASSERT_EQ(x, encode_reference(k.activation_type, xf)) << name_of(isa) << " " << name_of(t);
            for (int r = 0; r < rows; ++r) {
                const std::vector<uint8_t> w = encode_reference(t, make_row(Dist::Gaussian, n, 100 + r));
                check_dot(isa, t, n, w, x, "pipeline row " + std::to_string(r));
            }
        }
    }
}

// The family this process uses (INFERSCOPE_CPU_ISA may force a lower one): its kernels agree
// with the reference as well (run the suite with INFERSCOPE_CPU_ISA=avx2 / scalar too).
TEST(RowDotProducts, ActiveFamilyMatchesReference) {
    const CpuIsa isa = active_cpu_isa();
    std::printf("  active family: %s\n", name_of(isa).c_str());
    for (GgmlType t : kWeightTypes) {
        const RowDotKernels k = row_dot_kernels(t, isa);
        const int64_t n = block_elements(t) == 256 ? 4864 : 896;
        const std::vector<float> xf = make_row(Dist::Outliers, n, 77);
        std::vector<uint8_t> x(row_bytes(k.activation_type, n));
        k.encode(xf.data(), x.data(), n);
        ASSERT_EQ(x, encode_reference(k.activation_type, xf)) << name_of(t);
        for (int r = 0; r < 4; ++r) {
            check_dot(isa, t, n, encode_reference(t, make_row(Dist::Gaussian, n, 500 + r)), x, "active family");
        }
    }
}

// ------------------------------------------------------------------ several rows (dot_rows)

// dot_rows of `isa` over n_rows rows at `stride` bytes from each other (the rows packed, or
// with gaps) in a buffer of exactly the bytes the rows span, so that a read past the last
// row's end would be visible to sanitizers; each result against vec_dot within the bound.
void check_dot_rows(CpuIsa isa, GgmlType t, int64_t n, int64_t n_rows, uint64_t stride,
                    const std::vector<std::vector<uint8_t>>& rows, const std::vector<uint8_t>& x, const std::string& label) {
    const RowDotKernels k = row_dot_kernels(t, isa);
    const size_t rb = row_bytes(t, n);
    std::vector<uint8_t> buffer(static_cast<size_t>(stride) * static_cast<size_t>(n_rows - 1) + rb, 0xA5);
    for (int64_t r = 0; r < n_rows; ++r) std::memcpy(buffer.data() + static_cast<size_t>(r) * stride, rows[r].data(), rb);
    std::vector<float> out(static_cast<size_t>(n_rows) + 1, -12345.0f);
    k.dot_rows(n, buffer.data(), stride, n_rows, x.data(), out.data());
    EXPECT_EQ(out[static_cast<size_t>(n_rows)], -12345.0f) << name_of(isa) << " " << name_of(t) << ": wrote past out[n_rows - 1]";
    for (int64_t r = 0; r < n_rows; ++r) {
        const float want = vec_dot(t, n, rows[r].data(), x.data());
        const Magnitude m = magnitude(t, n, rows[r], x);
        const double err = std::fabs(static_cast<double>(out[r]) - static_cast<double>(want));
        EXPECT_LE(err, tolerance(t, n, m.s)) << name_of(isa) << " " << name_of(t) << " n=" << n << " rows=" << n_rows
                                             << " row " << r << " stride " << stride << " " << label << ": got " << out[r]
                                             << " reference " << want;
    }
}

std::vector<CpuIsa> all_supported_isas() {
    std::vector<CpuIsa> isas;
    for (CpuIsa isa : built_cpu_families()) {
        if (cpu_supports(isa)) isas.push_back(isa);
    }
    return isas;
}

// Every type and family, row counts with every remainder of the groups (4 rows for AVX2, 8
// for AVX-512) and more than one whole group, row lengths with every tail the kernels have
// (partial steps, single blocks), packed rows and rows with gaps.
TEST(RowDotRows, MatchScalarReferenceForEveryRowCount) {
    for (CpuIsa isa : all_supported_isas()) {
        for (GgmlType t : kWeightTypes) {
            const GgmlType at = vec_dot_type(t);
            uint32_t seed = 7000;
            for (int64_t n : dot_lengths(t)) {
                std::vector<std::vector<uint8_t>> rows;
                for (int r = 0; r < 17; ++r) rows.push_back(encode_reference(t, make_row(r % 2 ? Dist::Outliers : Dist::Gaussian, n, seed++)));
                const std::vector<uint8_t> x = encode_reference(at, make_row(Dist::Gaussian, n, seed++));
                const uint64_t rb = row_bytes(t, n);
                for (int64_t n_rows : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17}) {
                    check_dot_rows(isa, t, n, n_rows, rb, rows, x, "packed");
                    check_dot_rows(isa, t, n, n_rows, rb + 2 * ggml_type_traits(t).block_bytes, rows, x, "gaps");
                }
            }
        }
    }
}

// Random block bytes (every bit pattern of the quants, random scales) through dot_rows.
TEST(RowDotRows, MatchScalarReferenceOnRandomBlockBytes) {
    for (CpuIsa isa : all_supported_isas()) {
        for (GgmlType t : kWeightTypes) {
            if (is_float_type(t)) continue;
            std::mt19937 rng(static_cast<uint32_t>(t) * 131u + 5u);
            const bool avoid = t == GgmlType::Q8_0 && (isa == CpuIsa::Avx2 || isa == CpuIsa::AvxVnni);  // see row_dot_ymm.h
            for (int64_t n : dot_lengths(t)) {
                std::vector<std::vector<uint8_t>> rows;
                for (int r = 0; r < 17; ++r) rows.push_back(random_blocks(t, n, rng, avoid));
                const std::vector<uint8_t> x = random_blocks(vec_dot_type(t), n, rng);
                for (int64_t n_rows : {1, 4, 5, 7, 8, 9, 15, 17}) check_dot_rows(isa, t, n, n_rows, row_bytes(t, n), rows, x, "random bytes");
            }
        }
    }
}

// dot and dot_rows of one family agree (the same quantity; only the summation order may
// differ), and zero rows write nothing.
TEST(RowDotRows, AgreesWithDotAndHandlesZeroRows) {
    for (CpuIsa isa : all_supported_isas()) {
        for (GgmlType t : kWeightTypes) {
            const RowDotKernels k = row_dot_kernels(t, isa);
            const int64_t n = block_elements(t) == 256 ? 1280 : 896;
            const std::vector<uint8_t> x = encode_reference(k.activation_type, make_row(Dist::Gaussian, n, 99));
            const size_t rb = row_bytes(t, n);
            const int64_t n_rows = 9;
            std::vector<uint8_t> w(rb * n_rows);
            std::vector<std::vector<uint8_t>> rows;
            for (int64_t r = 0; r < n_rows; ++r) {
                rows.push_back(encode_reference(t, make_row(Dist::Gaussian, n, 300 + static_cast<uint32_t>(r))));
                std::memcpy(w.data() + r * rb, rows.back().data(), rb);
            }
            std::vector<float> out(static_cast<size_t>(n_rows));
            k.dot_rows(n, w.data(), rb, n_rows, x.data(), out.data());
            for (int64_t r = 0; r < n_rows; ++r) {
                const float single = k.dot(n, rows[r].data(), x.data());
                const Magnitude m = magnitude(t, n, rows[r], x);
                EXPECT_LE(std::fabs(static_cast<double>(out[r]) - single), 2 * tolerance(t, n, m.s))
                    << name_of(isa) << " " << name_of(t) << " row " << r;
            }
            float untouched = 1.5f;
            k.dot_rows(n, w.data(), rb, 0, x.data(), &untouched);
            EXPECT_EQ(untouched, 1.5f) << name_of(isa) << " " << name_of(t);
        }
    }
}

// A range long enough to be read as eight streams (each eighth of it at least 8 KiB: row
// j's group is j, j + s, ..., j + 7s) gives every row the same bits as groups of eight
// neighbours do (the range cut into calls of eight rows, then the rows left), with and
// without gaps between the rows, writes nothing past out[n_rows - 1], and matches the
// scalar reference.
TEST(RowDotRows, LongRangesGiveEveryRowTheBitsOfNeighbourGroups) {
    for (CpuIsa isa : all_supported_isas()) {
        for (GgmlType t : kWeightTypes) {
            const RowDotKernels k = row_dot_kernels(t, isa);
            const int64_t n = block_elements(t) == 256 ? 1280 : 896;
            const std::vector<uint8_t> x = encode_reference(k.activation_type, make_row(Dist::Gaussian, n, 77));
            const uint64_t rb = row_bytes(t, n);
            const int64_t per_stream = static_cast<int64_t>(8192 / rb) + 2;
            const int64_t n_rows = 8 * per_stream + 5;
            std::vector<std::vector<uint8_t>> rows;
            for (int64_t r = 0; r < n_rows; ++r) {
                rows.push_back(encode_reference(t, make_row(r % 3 ? Dist::Gaussian : Dist::Outliers, n, 900 + static_cast<uint32_t>(r))));
            }
            for (const uint64_t stride : {rb, rb + 2 * ggml_type_traits(t).block_bytes}) {
                std::vector<uint8_t> w(static_cast<size_t>(stride) * static_cast<size_t>(n_rows), 0xA5);
                for (int64_t r = 0; r < n_rows; ++r) std::memcpy(w.data() + r * stride, rows[static_cast<size_t>(r)].data(), rb);
                std::vector<float> whole(static_cast<size_t>(n_rows) + 1, -12345.0f);
                k.dot_rows(n, w.data(), stride, n_rows, x.data(), whole.data());
                EXPECT_EQ(whole.back(), -12345.0f) << name_of(isa) << " " << name_of(t) << ": wrote past out[n_rows - 1]";
                std::vector<float> in_eights(static_cast<size_t>(n_rows));
                int64_t r = 0;
                for (; r + 8 <= n_rows; r += 8) k.dot_rows(n, w.data() + r * stride, stride, 8, x.data(), in_eights.data() + r);
                k.dot_rows(n, w.data() + r * stride, stride, n_rows - r, x.data(), in_eights.data() + r);
                for (int64_t i = 0; i < n_rows; ++i) {
                    EXPECT_EQ(std::bit_cast<uint32_t>(whole[static_cast<size_t>(i)]), std::bit_cast<uint32_t>(in_eights[static_cast<size_t>(i)]))
                        << name_of(isa) << " " << name_of(t) << " row " << i << " of " << n_rows << " stride " << stride << ": "
                        << whole[static_cast<size_t>(i)] << " against " << in_eights[static_cast<size_t>(i)];
                }
                check_dot_rows(isa, t, n, n_rows, stride, rows, x, "eight streams");
            }
        }
    }
}

// The batch kernels (several activation rows against each weight row) give every activation
// row the bits dot_rows gives it over the same range: every row length with its tails,
// ranges short (groups of neighbours) and long (eight streams) with every remainder kind,
// up to six activation rows (more than one pass of four), random block bytes for the
// quantized formats; nothing is written outside the output rows' [0, n_rows).
TEST(RowDotRows, BatchGivesEveryActivationTheBitsOfDotRows) {
    int checked = 0;
    for (CpuIsa isa : all_supported_isas()) {
        for (GgmlType t : kWeightTypes) {
            const RowDotKernels k = row_dot_kernels(t, isa);
            if (k.dot_rows_batch == nullptr) continue;
            std::mt19937 rng(static_cast<uint32_t>(t) * 17u + 3u);
            for (int64_t n : dot_lengths(t)) {
                const uint64_t rb = row_bytes(t, n);
                const uint64_t xb = row_bytes(k.activation_type, n);
                const int64_t long_range = 8 * (static_cast<int64_t>(8192 / rb) + 1);
                for (int64_t n_rows : {int64_t{1}, int64_t{5}, int64_t{8}, int64_t{12}, int64_t{13}, long_range + 3, long_range + 4}) {
                    std::vector<uint8_t> w;
                    for (int64_t r = 0; r < n_rows; ++r) {
                        // Float rows from finite values: a NaN's payload depends on the order
                        // the compiler gave a multiply's operands, not on the kernel.
                        const std::vector<uint8_t> row = is_float_type(t) ? encode_reference(t, make_row(Dist::Outliers, n, rng()))
                                                                          : random_blocks(t, n, rng);
                        w.insert(w.end(), row.begin(), row.end());
                    }
                    for (int n_x : {1, 2, 3, 4, 6}) {
                        std::vector<uint8_t> x;
                        for (int i = 0; i < n_x; ++i) {
                            const std::vector<uint8_t> row = encode_reference(k.activation_type, make_row(Dist::Outliers, n, rng()));
                            x.insert(x.end(), row.begin(), row.end());
                        }
                        const int64_t out_stride = n_rows + 3;
                        std::vector<float> out(static_cast<size_t>(out_stride * n_x), -12345.0f);
                        k.dot_rows_batch(n, w.data(), rb, n_rows, x.data(), xb, n_x, out.data(), out_stride);
                        for (int i = 0; i < n_x; ++i) {
                            std::vector<float> want(static_cast<size_t>(n_rows));
                            k.dot_rows(n, w.data(), rb, n_rows, x.data() + i * xb, want.data());
                            for (int64_t r = 0; r < out_stride; ++r) {
                                const float got = out[static_cast<size_t>(i * out_stride + r)];
                                if (r >= n_rows) {
                                    EXPECT_EQ(got, -12345.0f) << name_of(isa) << " " << name_of(t) << ": wrote past row " << n_rows - 1;
                                    continue;
                                }
                                EXPECT_EQ(std::bit_cast<uint32_t>(got), std::bit_cast<uint32_t>(want[static_cast<size_t>(r)]))
                                    << name_of(isa) << " " << name_of(t) << " n=" << n << " rows=" << n_rows << " activation " << i
                                    << " of " << n_x << " row " << r << ": " << got << " against dot_rows' " << want[static_cast<size_t>(r)];
                            }
                        }
                        ++checked;
                    }
                }
            }
        }
    }
    if (checked == 0) GTEST_SKIP() << "no instruction-set family on this CPU has batch kernels (AVX2 and AVX-512 with VNNI do)";
}

// The 256-bit families (AVX2, AVX-VNNI) have batch kernels for every weight format, so that
// batched decode unpacks each weight row once for all the sequences (the bits are checked above).
TEST(RowDotRows, Avx2FamiliesHaveBatchKernels) {
    int checked = 0;
    for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::AvxVnni}) {
        if (!cpu_supports(isa) || row_dot_family_kernels(GgmlType::Q8_0, isa).dot == nullptr) continue;
        for (GgmlType t : kWeightTypes) {
            EXPECT_NE(row_dot_family_kernels(t, isa).dot_rows_batch, nullptr) << name_of(t) << " " << name_of(isa);
        }
        ++checked;
    }
    if (checked == 0) GTEST_SKIP() << "this CPU runs neither AVX2 family";
}

// Where the AVX-512 kernels prefetch the weights changes no result: both levels' tables give
// the same bits for every type, over row counts with and without whole groups.
TEST(RowDotRows, BothPrefetchLevelsComputeTheSame) {
#if !defined(__x86_64__)
    GTEST_SKIP() << "the prefetch levels belong to the x86-64 AVX-512 kernels, which this build lacks";
#else
    if (!cpu_supports(CpuIsa::Avx512) || !cpu_features().avx512vnni) {
        GTEST_SKIP() << "the AVX-512 row kernels need AVX-512 F/BW/VL and VNNI, which this CPU lacks";
    }
    for (GgmlType t : kWeightTypes) {
        const RowDotKernels l1 = simd::avx512_row_dot_kernels(t, PrefetchLevel::L1);
        const RowDotKernels l2 = simd::avx512_row_dot_kernels(t, PrefetchLevel::L2);
        const int64_t n = block_elements(t) == 256 ? 2560 : 4864;
        const std::vector<uint8_t> x = encode_reference(l1.activation_type, make_row(Dist::Gaussian, n, 41));
        const size_t rb = row_bytes(t, n);
        const int64_t n_rows = 21;
        std::vector<uint8_t> w;
        for (int64_t r = 0; r < n_rows; ++r) {
            const std::vector<uint8_t> row = encode_reference(t, make_row(Dist::Outliers, n, 500 + static_cast<uint32_t>(r)));
            w.insert(w.end(), row.begin(), row.end());
        }
        std::vector<float> out_l1(static_cast<size_t>(n_rows)), out_l2(static_cast<size_t>(n_rows));
        l1.dot_rows(n, w.data(), rb, n_rows, x.data(), out_l1.data());
        l2.dot_rows(n, w.data(), rb, n_rows, x.data(), out_l2.data());
        EXPECT_EQ(out_l1, out_l2) << name_of(t);
    }
#endif
}

// The FMLAL rows multiply halves without widening them first; the products are exact in
// single precision and each lane is one fused add, so every sum has the NEON F16 rows' bits:
// rows, batches and a tail past the last whole 16 elements.
TEST(RowDotRows, FmlalHalfRowsHaveTheBitsOfNeonHalfRows) {
#if !defined(__aarch64__)
    GTEST_SKIP() << "FMLAL (FEAT_FHM) belongs to the ARM64 kernels, which this build lacks";
#else
    if (!cpu_features().fp16_fml) GTEST_SKIP() << "this CPU lacks FEAT_FHM (the FMLAL rows)";
    const RowDotKernels neon = simd::neon_row_dot_kernels(GgmlType::F16);
    const RowDotKernels fmlal = simd::fhm_f16_row_dot_kernels();
    EXPECT_EQ(row_dot_kernels(GgmlType::F16, CpuIsa::Dotprod).dot_rows, fmlal.dot_rows);
    for (const int64_t n : {int64_t{16}, int64_t{901}, int64_t{4864}}) {
        const size_t rb = row_bytes(GgmlType::F16, n);
        const int n_x = 6;
        const int64_t n_rows = 13;
        std::vector<uint8_t> w, x;
        for (int64_t r = 0; r < n_rows; ++r) {
            const auto row = encode_reference(GgmlType::F16, make_row(Dist::Outliers, n, 700 + static_cast<uint32_t>(r)));
            w.insert(w.end(), row.begin(), row.end());
        }
        for (int i = 0; i < n_x; ++i) {
            const auto row = encode_reference(GgmlType::F16, make_row(Dist::Gaussian, n, 900 + static_cast<uint32_t>(i)));
            x.insert(x.end(), row.begin(), row.end());
        }
        const size_t count = static_cast<size_t>(n_x * n_rows);
        std::vector<float> want(count), got_rows(count), got_batch(count);
        for (int i = 0; i < n_x; ++i) {
            neon.dot_rows(n, w.data(), rb, n_rows, x.data() + i * rb, want.data() + i * n_rows);
            fmlal.dot_rows(n, w.data(), rb, n_rows, x.data() + i * rb, got_rows.data() + i * n_rows);
        }
        fmlal.dot_rows_batch(n, w.data(), rb, n_rows, x.data(), rb, n_x, got_batch.data(), n_rows);
        EXPECT_EQ(std::memcmp(want.data(), got_rows.data(), count * sizeof(float)), 0) << "n = " << n;
        EXPECT_EQ(std::memcmp(want.data(), got_batch.data(), count * sizeof(float)), 0) << "n = " << n;
        EXPECT_EQ(fmlal.dot(n, w.data(), x.data()), want[0]) << "n = " << n;
    }
#endif
}

}  // namespace
}  // namespace inferscope
