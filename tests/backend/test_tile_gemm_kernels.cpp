// The tiled (prefill) GEMM kernels (engine/backend/cpu/kernels/tile_gemm.h) of every
// instruction-set family this CPU runs, against the scalar row dot product vec_dot of
// engine/formats/quant.h: every output c[i * ldc + r] of random weight matrices (several
// value distributions, per-row scales over six orders of magnitude, all-zero rows) times
// random activation rows, for many activation counts, row ranges that start inside a panel,
// one-block, medium and long rows, and ldc > rows. Entries of c outside the requested
// columns must stay untouched. Buffers start at odd addresses (the kernels may not assume
// alignment; GGUF rows come straight from a memory mapping).
//
// Tolerance (derived, not tuned): the kernels form the same exact integer sums per block or
// group (quantized types) or the same exact products (F16, BF16: a product of two halves
// fits a float), and differ from vec_dot only in how the float terms are summed. A float sum
// of terms t with at most L additions on any path is off by at most L * u * sum|t| (first
// order, u = 2^-24), and each term carries at most 3 roundings of its own (scale products,
// FMA). The kernels chain at most 256 additions within a k chunk (BF16: 128 VDPBF16PS of two
// products each; F16: 96 FMAs; quantized: at most 17 block or group terms) plus one per
// chunk, and chunks hold at least 96 elements. vec_dot chains one addition per block
// (quantized; the K-quants sum 8 lanes at the end), or accumulates in double (F16, BF16).
// So, with B = k / block size,
//   |got - want| <= (256 + k / 96 + 4 + (float type ? 2 : B + 12)) * u * M + tiny,
// where M bounds sum|t|: sum |w_l x_l| over dequantized elements, plus for the formats with
// a separately stored min (Q4_1, Q5_1, Q2_K, Q4_K, Q5_K), whose terms d*q*x and m*x can
// cancel, 2.1 * max|w| of the element's block times |x_l| (|m| <= max|w| of the block up to
// the min's own rounding, and |d*q| <= |w| + |m|).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"
#include "formats/quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::make_row;

const GgmlType kWeightTypes[] = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                 GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K,
                                 GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                 GgmlType::IQ4_NL, GgmlType::IQ4_XS};

std::string name_of(GgmlType t) { return std::string(ggml_type_name(t)); }
std::string name_of(CpuIsa isa) { return std::string(cpu_isa_name(isa)); }

int64_t block_elements(GgmlType t) { return ggml_type_traits(t).block_elements; }
size_t row_bytes(GgmlType t, int64_t n) { return ggml_row_bytes(t, static_cast<uint64_t>(n)); }

bool has_separate_min(GgmlType t) {
    return t == GgmlType::Q4_1 || t == GgmlType::Q5_1 || t == GgmlType::Q2_K || t == GgmlType::Q4_K ||
           t == GgmlType::Q5_K;
}

TileGemmFn family_kernel(CpuIsa isa, GgmlType type) { return tile_gemm_family_kernel(type, isa); }

// Whether `isa` is expected to provide a tiled kernel for `type` on this CPU.
bool expected(CpuIsa isa, GgmlType type) {
    if (!cpu_supports(isa)) return false;
    const CpuFeatures& f = cpu_features();
    if (isa == CpuIsa::Avx2 || isa == CpuIsa::AvxVnni) {
        return type != GgmlType::BF16 && type != GgmlType::Q4_1 && type != GgmlType::Q5_1;
    }
    if (isa != CpuIsa::Avx512) return false;  // the ARM64 families have no tiled kernels yet
    if (type == GgmlType::F16) return true;
    if (type == GgmlType::BF16) return f.avx512bf16;
    return f.avx512vnni;
}

// A matrix of encoded rows at an odd address, with its dequantized values.
struct Matrix {
    std::vector<uint8_t> storage;
    size_t offset = 1;
    uint64_t row_bytes = 0;
    int64_t rows = 0, k = 0;
    std::vector<float> values;  // dequantized, rows x k

    const uint8_t* data() const { return storage.data() + offset; }
    const uint8_t* row(int64_t r) const { return data() + static_cast<uint64_t>(r) * row_bytes; }
};

// Rows of `dist`, each scaled by a factor in [1e-3, 1e3]; every 11th row all zero.
Matrix make_matrix(GgmlType type, int64_t rows, int64_t k, Dist dist, uint32_t seed, uint64_t extra_row_bytes) {
    Matrix m;
    m.rows = rows;
    m.k = k;
    m.row_bytes = row_bytes(type, k) + extra_row_bytes;
    m.storage.assign(m.offset + static_cast<size_t>(m.row_bytes * rows), 0xA5);
    m.values.resize(static_cast<size_t>(rows * k));
    std::mt19937 rng(seed);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> x = make_row(dist, k, seed * 7919u + static_cast<uint32_t>(r));
        const float scale = std::pow(10.0f, testing::unit_float(rng) * 6.0f - 3.0f);
        for (float& v : x) v = r % 11 == 4 ? 0.0f : v * scale;
        uint8_t* dst = m.storage.data() + m.offset + static_cast<uint64_t>(r) * m.row_bytes;
        quantize_row(type, x.data(), dst, k);
        dequantize_row(type, dst, m.values.data() + r * k, k);
    }
    return m;
}

struct TileGemmShape {
    int64_t k;
    int64_t rows;       // weight rows in the matrix
    int64_t row_begin, row_end;
    int64_t n;          // activation rows
    int64_t ldc_extra;  // ldc = rows + ldc_extra
};

// Runs one shape and checks every output (and that nothing else in c was written).
void check_shape(CpuIsa isa, GgmlType type, TileGemmFn kernel, const TileGemmShape& s, Dist wdist, Dist xdist, uint32_t seed) {
    SCOPED_TRACE(name_of(type) + " on " + name_of(isa) + ": k=" + std::to_string(s.k) + " rows [" +
                 std::to_string(s.row_begin) + "," + std::to_string(s.row_end) + ") of " + std::to_string(s.rows) +
                 ", n=" + std::to_string(s.n) + ", ldc=rows+" + std::to_string(s.ldc_extra) + ", dists " +
                 std::to_string(static_cast<int>(wdist)) + "/" + std::to_string(static_cast<int>(xdist)));
    const GgmlType xtype = vec_dot_type(type);
    const Matrix w = make_matrix(type, s.rows, s.k, wdist, seed, s.rows % 2 ? 0 : 3);
    const Matrix x = make_matrix(xtype, s.n, s.k, xdist, seed + 1000, s.n % 2 ? 5 : 0);

    const int64_t ldc = s.rows + s.ldc_extra;
    const float sentinel = -12345.25f;
    std::vector<float> c(static_cast<size_t>(s.n * ldc), sentinel);
    TileGemmArgs args;
    args.k = s.k;
    args.weights = w.data();
    args.weight_row_bytes = w.row_bytes;
    args.row_begin = s.row_begin;
    args.row_end = s.row_end;
    args.activations = x.data();
    args.activation_row_bytes = x.row_bytes;
    args.n = s.n;
    args.c = c.data();
    args.ldc = ldc;
    kernel(args);

    const int64_t block = block_elements(type);
    const int64_t blocks = s.k / block;
    const double u = std::ldexp(1.0, -24);
    const double reference_chain = block == 1 ? 2.0 : static_cast<double>(blocks) + 12.0;
    const double gamma = (256.0 + std::ceil(static_cast<double>(s.k) / 96.0) + 4.0 + reference_chain) * u;
    const bool with_min = has_separate_min(type);
    int failures = 0;
    for (int64_t i = 0; i < s.n; ++i) {
        for (int64_t r = 0; r < ldc; ++r) {
            const float got = c[static_cast<size_t>(i * ldc + r)];
            if (r < s.row_begin || r >= s.row_end) {
                if (std::memcmp(&got, &sentinel, sizeof(float)) != 0 && failures++ < 10) {
                    ADD_FAILURE() << "c[" << i << "*ldc+" << r << "] outside the row range was written: " << got;
                }
                continue;
            }
            const float want = vec_dot(type, s.k, w.row(r), x.row(i));
            double magnitude = 0.0;
            const float* wv = w.values.data() + r * s.k;
            const float* xv = x.values.data() + i * s.k;
            for (int64_t b = 0; b < blocks; ++b) {
                double wmax = 0.0;
                if (with_min) {
                    for (int64_t l = 0; l < block; ++l) wmax = std::fmax(wmax, std::fabs(wv[b * block + l]));
                }
                for (int64_t l = 0; l < block; ++l) {
                    const int64_t e = b * block + l;
                    magnitude += (std::fabs(static_cast<double>(wv[e])) + 2.1 * wmax) * std::fabs(static_cast<double>(xv[e]));
                }
            }
            const double bound = gamma * magnitude + 1e-30;
            if (!(std::fabs(static_cast<double>(got) - static_cast<double>(want)) <= bound) && failures++ < 10) {
                ADD_FAILURE() << "c[" << i << "][" << r << "] = " << got << ", vec_dot = " << want << ", |diff| "
                              << std::fabs(static_cast<double>(got) - want) << " > bound " << bound;
            }
        }
    }
    EXPECT_EQ(failures, 0);
}

struct Param {
    GgmlType type;
    CpuIsa isa;
};

class TileGemmKernelsTest : public ::testing::TestWithParam<Param> {};

TEST_P(TileGemmKernelsTest, MatchesRowDotProducts) {
    const auto [type, isa] = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << name_of(isa) << " kernels";
    const TileGemmFn kernel = family_kernel(isa, type);
    if (kernel == nullptr) {
        ASSERT_FALSE(expected(isa, type)) << name_of(isa) << " should provide a tiled " << name_of(type) << " kernel";
        GTEST_SKIP() << name_of(isa) << " has no tiled " << name_of(type) << " kernel on this CPU (callers use row dots)";
    }
    const int64_t block = block_elements(type);
    const bool is_float = block == 1;
    // One block (for F16/BF16: a few elements, odd counts and a 16-element tail too).
    const int64_t one_block = is_float ? 1 : block;
    std::vector<TileGemmShape> shapes;
    uint32_t seed = 1;
    for (const int64_t n : {1, 2, 3, 7, 16, 33, 64}) {
        shapes.push_back({one_block, 40, 3, 40, n, 0});
        shapes.push_back({is_float ? 37 : 3 * block, 23, 5, 22, n, 2});
    }
    if (is_float) {
        shapes.push_back({15, 17, 0, 17, 13, 1});
        shapes.push_back({129, 35, 1, 34, 12, 0});
        shapes.push_back({257, 33, 2, 33, 25, 3});
    }
    shapes.push_back({is_float ? 50 : 2 * block, 20, 4, 13, 5, 1});  // fewer rows than one vector
    const int64_t medium = 896 % block == 0 ? 896 : 1280;  // K-quants: whole super-blocks
    for (const int64_t n : {1, 3, 16, 33, 64}) shapes.push_back({medium, 77, 5, 77, n, 3});
    shapes.push_back({medium, 48, 16, 48, 24, 0});
    shapes.push_back({medium, 64, 0, 64, 13, 0});
    for (const int64_t n : {7, 33}) shapes.push_back({4864, 41, 9, 41, n, 1});
    // Many rows and activation rows: several row blocks and activation blocks (the quantized
    // kernels prepare the activation side of at most 512 rows at a time).
    shapes.push_back({is_float ? 40 : 2 * block, 450, 7, 441, 600, 5});

    const Dist dists[] = {Dist::Gaussian, Dist::Outliers, Dist::ZeroBlocks, Dist::Uniform, Dist::Positive, Dist::Discrete};
    size_t d = 0;
    for (const TileGemmShape& s : shapes) {
        if (s.k % block != 0) continue;
        const Dist wdist = dists[d % std::size(dists)];
        const Dist xdist = dists[(d * 5 + 1) % std::size(dists)];
        ++d;
        check_shape(isa, type, kernel, s, wdist, xdist, seed++);
        if (HasFailure()) return;
    }
}

std::vector<Param> all_params() {
    std::vector<Param> params;
    for (const CpuIsa isa : built_cpu_families()) {
        if (isa == CpuIsa::Scalar) continue;
        for (const GgmlType type : kWeightTypes) params.push_back({type, isa});
    }
    return params;
}

INSTANTIATE_TEST_SUITE_P(Families, TileGemmKernelsTest, ::testing::ValuesIn(all_params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                             return name_of(info.param.isa) + "_" + name_of(info.param.type);
                         });

// The kernel the engine would use (the active family, which INFERSCOPE_CPU_ISA can lower)
// on a small product, where the family has one.
TEST(TileGemmDispatch, ActiveFamilyKernelsMatch) {
    const CpuIsa isa = active_cpu_isa();
    int tested = 0;
    for (const GgmlType type : kWeightTypes) {
        const TileGemmFn kernel = tile_gemm_kernel(type, isa);
        if (kernel == nullptr) continue;
        const int64_t block = block_elements(type);
        check_shape(isa, type, kernel, TileGemmShape{block == 1 ? 40 : 2 * block, 37, 3, 37, 9, 2}, Dist::Gaussian,
                    Dist::Outliers, 77);
        ++tested;
    }
    if (tested == 0) GTEST_SKIP() << "the active family (" << name_of(isa) << ") has no tiled kernels";
}

// The dispatcher hands out the family's kernel, and a family falls back to the one below it
// for types it has none for.
TEST(TileGemmDispatch, PicksTheFamilyKernel) {
    EXPECT_EQ(tile_gemm_kernel(GgmlType::F16, CpuIsa::Scalar), nullptr);
    for (const CpuIsa isa : built_cpu_families()) {
        if (isa == CpuIsa::Scalar) continue;
        for (const GgmlType type : kWeightTypes) {
            SCOPED_TRACE(name_of(isa) + " " + name_of(type));
            const TileGemmFn own = tile_gemm_family_kernel(type, isa);
            EXPECT_EQ(tile_gemm_kernel(type, isa), own != nullptr ? own : tile_gemm_kernel(type, family_below(isa)));
        }
    }
}

}  // namespace
}  // namespace inferscope
