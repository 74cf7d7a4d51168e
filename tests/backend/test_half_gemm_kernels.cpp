// The unpacked F16/BF16 kernel for a few activation rows (engine/backend/cpu/kernels/
// half_gemm.h) against a double-precision sum of the same products: every output of random
// weight matrices at odd addresses (rows padded or not, all-zero rows, scales over six
// orders of magnitude) times activation rows holding values of the weight's half type, for
// activation counts on both paths (narrow: groups of one to eight rows; wide: one to four
// interleaved groups, full and partial), row ranges that start and end inside a tile,
// lengths with and without a partial last vector or chunk, and ldc > rows. Entries of c outside the requested rows must stay untouched.
//
// Tolerance (derived, not tuned): a product of two halves is exact in float. The narrow path
// chains ceil(k / 16) fused multiply-adds per lane and a horizontal sum of 4 levels; the
// wide path chains k of them. So |got - exact| <= (k + 4) * u * sum |w_l x_l|, u = 2^-24.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/half_gemm.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/core/thread_pool.h"
#include "engine/core/fp16.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"
#include "formats/quant_test_util.h"

namespace inferscope {
namespace {

using testing::Dist;
using testing::make_row;

struct HalfMatrix {
    std::vector<uint8_t> storage;  // starts one byte in: rows at odd addresses
    uint64_t row_bytes = 0;
    std::vector<float> values;     // [rows x k] the stored values widened to float
    const uint8_t* data() const { return storage.data() + 1; }
};

HalfMatrix make_weights(GgmlType type, int64_t rows, int64_t k, Dist dist, uint32_t seed) {
    HalfMatrix m;
    m.row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(k)) + (rows % 2 ? 0 : 6);
    m.storage.assign(1 + static_cast<size_t>(m.row_bytes * rows), 0xA5);
    m.values.resize(static_cast<size_t>(rows * k));
    std::mt19937 rng(seed);
    for (int64_t r = 0; r < rows; ++r) {
        std::vector<float> x = make_row(dist, k, seed * 31u + static_cast<uint32_t>(r));
        const float scale = std::pow(10.0f, testing::unit_float(rng) * 6.0f - 3.0f);
        for (float& v : x) v = r % 7 == 5 ? 0.0f : v * scale;
        uint8_t* dst = m.storage.data() + 1 + static_cast<uint64_t>(r) * m.row_bytes;
        quantize_row(type, x.data(), dst, k);
        dequantize_row(type, dst, m.values.data() + r * k, k);
    }
    return m;
}

// Activation rows as the matmul passes them: rounded to the weight's type, widened to float.
std::vector<float> make_activations(GgmlType type, int64_t n, int64_t k, Dist dist, uint32_t seed) {
    std::vector<float> x(static_cast<size_t>(n * k));
    std::vector<uint8_t> encoded(ggml_row_bytes(type, static_cast<uint64_t>(k)));
    for (int64_t i = 0; i < n; ++i) {
        const std::vector<float> row = make_row(dist, k, seed + static_cast<uint32_t>(i));
        quantize_row(type, row.data(), encoded.data(), k);
        dequantize_row(type, encoded.data(), x.data() + i * k, k);
    }
    return x;
}

struct HalfGemmShape {
    int64_t k, rows, row_begin, row_end, n, ldc_extra;
};

int check_shape(GgmlType type, HalfGemmFn kernel, const HalfGemmShape& s, Dist wdist, Dist xdist, uint32_t seed) {
    SCOPED_TRACE(std::string(ggml_type_name(type)) + ": k=" + std::to_string(s.k) + " rows [" +
                 std::to_string(s.row_begin) + "," + std::to_string(s.row_end) + ") n=" + std::to_string(s.n));
    const HalfMatrix w = make_weights(type, s.rows, s.k, wdist, seed);
    const std::vector<float> x = make_activations(type, s.n, s.k, xdist, seed + 500);
    const int64_t ldc = s.rows + s.ldc_extra;
    const float sentinel = -777.5f;
    std::vector<float> c(static_cast<size_t>(s.n * ldc), sentinel);
    // Interleaved in three element ranges, as threads do, over a buffer of NaN: a lane or a
    // padding element left unwritten would turn its outputs into NaN.
    std::vector<float> xt(static_cast<size_t>(interleaved_floats(s.n, s.k)), std::numeric_limits<float>::quiet_NaN());
    for (int part = 0; part < 3; ++part) interleave_rows(x.data(), s.n, s.k, xt.data(), s.k * part / 3, s.k * (part + 1) / 3);
    kernel({s.k, w.data(), w.row_bytes, s.row_begin, s.row_end, x.data(), xt.data(), s.n, c.data(), ldc});

    const double chain = s.n >= kHalfGemmWideFrom ? static_cast<double>(s.k) : std::ceil(static_cast<double>(s.k) / 16.0);
    const double gamma = (chain + 4.0) * std::ldexp(1.0, -24);
    int failures = 0;
    for (int64_t i = 0; i < s.n; ++i) {
        for (int64_t r = 0; r < ldc; ++r) {
            const float got = c[static_cast<size_t>(i * ldc + r)];
            if (r < s.row_begin || r >= s.row_end) {
                if (std::memcmp(&got, &sentinel, sizeof got) != 0 && failures++ < 10) {
                    ADD_FAILURE() << "c[" << i << "][" << r << "] outside the row range was written: " << got;
                }
                continue;
            }
            double exact = 0.0, magnitude = 0.0;
            for (int64_t l = 0; l < s.k; ++l) {
                const double t = static_cast<double>(w.values[static_cast<size_t>(r * s.k + l)]) * x[static_cast<size_t>(i * s.k + l)];
                exact += t;
                magnitude += std::fabs(t);
            }
            const double bound = gamma * magnitude + 1e-30;
            if (!(std::fabs(got - exact) <= bound) && failures++ < 10) {
                ADD_FAILURE() << "c[" << i << "][" << r << "] = " << got << ", exact " << exact << ", bound " << bound;
            }
        }
    }
    return failures;
}

class HalfGemmKernelTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(HalfGemmKernelTest, MatchesExactSums) {
    const GgmlType type = GetParam();
    const HalfGemmFn kernel = half_gemm_kernel(type, CpuIsa::Avx512);
    if (!cpu_supports(CpuIsa::Avx512)) {
        ASSERT_EQ(kernel, nullptr);
        GTEST_SKIP() << "this CPU cannot run AVX-512 kernels; matmul uses the other paths for half weights";
    }
    ASSERT_NE(kernel, nullptr);
    uint32_t seed = 1;
    int failures = 0;
    for (const int64_t n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 20, 24, 25, 31, 32, 33, 48, 50, 64}) {
        for (const int64_t k : {16, 23, 96, 100, 200, 896}) {
            const Dist wdist = n % 3 == 0 ? Dist::Outliers : Dist::Gaussian;
            const Dist xdist = n % 2 == 0 ? Dist::Uniform : Dist::Gaussian;
            failures += check_shape(type, kernel, {k, 29, n % 4, 29 - n % 3, n, n % 5}, wdist, xdist, seed++);
        }
    }
    // Ranges of several 96-row blocks, which two or more groups of activation rows visit in
    // turn, starting and ending inside a block.
    for (const int64_t n : {9, 12, 15, 16}) {
        failures += check_shape(type, kernel, {100, 230, 7, 221, n, 3}, Dist::Gaussian, Dist::Uniform, seed++);
    }
    EXPECT_EQ(failures, 0);
}

// The vectorized rounding gives the scalar reference's value for every class of input:
// ties at both precisions, subnormal results, values that overflow F16, infinities, NaN.
TEST(HalfGemmKernel, RoundingMatchesTheScalarReference) {
    std::vector<float> x = {0.0f, -0.0f, 1.0f, 1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f,
                            65504.0f, 65519.99f, 65520.0f, -1e9f, 0x1p-20f, 0x1.8p-25f, 0x1p-26f, 1e-45f,
                            std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(), 3.0e38f};
    std::mt19937 rng(7);
    for (int i = 0; i < 1000; ++i) {
        const uint32_t bits = static_cast<uint32_t>(rng());
        float v;
        std::memcpy(&v, &bits, sizeof v);
        x.push_back(v);
    }
    for (const GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        for (const CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx512}) {
            std::vector<float> got(x.size(), -1.0f);
            round_to_half(type, x.data(), static_cast<int64_t>(x.size()), got.data(), isa);
            for (size_t i = 0; i < x.size(); ++i) {
                const float want = type == GgmlType::F16 ? round_to_fp16(x[i]) : round_to_bf16(x[i]);
                if (std::isnan(want)) {
                    EXPECT_TRUE(std::isnan(got[i])) << ggml_type_name(type) << " " << x[i];
                } else {
                    EXPECT_EQ(std::memcmp(&got[i], &want, sizeof want), 0)
                        << ggml_type_name(type) << " on " << cpu_isa_name(isa) << ": " << x[i] << " -> " << got[i] << ", want " << want;
                }
            }
        }
    }
}

// The matmul routing around the kernel (rounding the input, interleaving it on all threads,
// one shared-input call for two matrices, rows split across threads): for every batch size
// that takes the half kernel (and the sizes between, which take the tiled kernel), each
// output row equals the single-row product of the same input row, which runs the row dot
// products on the same F16-rounded input. Bound as in MatchesExactSums, for both results.
// Also 2..7 rows, which run as row dot products over passes of about 24 KiB of weight rows:
// the 253-row matrix spans several passes per thread.
TEST(HalfGemmKernel, MatmulOfSeveralRowsEqualsOneRowAtATime) {
    if (!cpu_supports(CpuIsa::Avx512)) GTEST_SKIP() << "this CPU cannot run AVX-512 kernels; matmul has no half kernel here";
    constexpr int64_t kCols = 200, kRowsA = 37, kRowsB = 253;
    const HalfMatrix a = make_weights(GgmlType::F16, kRowsA, kCols, Dist::Gaussian, 3);
    const HalfMatrix b = make_weights(GgmlType::F16, kRowsB, kCols, Dist::Outliers, 4);
    const auto matrix = [&](const HalfMatrix& m, int64_t rows) {
        WeightMatrix w;
        w.type = GgmlType::F16;
        w.rows = rows;
        w.cols = kCols;
        w.row_bytes = m.row_bytes;
        w.data = m.data();
        return w;
    };
    const WeightMatrix wa = matrix(a, kRowsA), wb = matrix(b, kRowsB);
    ThreadPool pool(2);
    MatmulScratch scratch;
    const double gamma = (static_cast<double>(kCols) + 4.0) * std::ldexp(1.0, -24) * 2.0;
    for (const int64_t n : {2, 3, 5, 7, 8, 12, 15, 16, 17, 21, 24, 30, 32, 48, 64}) {
        const std::vector<float> x = make_row(Dist::Gaussian, n * kCols, static_cast<uint32_t>(n));
        std::vector<float> ya(static_cast<size_t>(n * kRowsA)), yb(static_cast<size_t>(n * kRowsB));
        const MatmulOutput outputs[] = {{&wa, ya.data()}, {&wb, yb.data()}};
        matmul_shared_input(outputs, x.data(), n, pool, scratch);
        int failures = 0;
        for (const auto& [w, m, y] : {std::tuple{&wa, &a, &ya}, std::tuple{&wb, &b, &yb}}) {
            std::vector<float> one(static_cast<size_t>(w->rows));
            for (int64_t i = 0; i < n; ++i) {
                matmul(*w, x.data() + i * kCols, 1, one.data(), pool, scratch);
                for (int64_t r = 0; r < w->rows; ++r) {
                    double magnitude = 0.0;
                    for (int64_t l = 0; l < kCols; ++l) {
                        magnitude += std::fabs(static_cast<double>(m->values[static_cast<size_t>(r * kCols + l)]) *
                                               round_to_fp16(x[static_cast<size_t>(i * kCols + l)]));
                    }
                    const float got = (*y)[static_cast<size_t>(i * w->rows + r)];
                    if (!(std::fabs(got - one[static_cast<size_t>(r)]) <= gamma * magnitude + 1e-30) && failures++ < 10) {
                        ADD_FAILURE() << "n=" << n << " row " << i << " output " << r << ": " << got << " vs one row at a time "
                                      << one[static_cast<size_t>(r)];
                    }
                }
            }
        }
        EXPECT_EQ(failures, 0) << "n=" << n;
    }
}

TEST(HalfGemmKernel, OnlyHalfTypesHaveOne) {
    for (const GgmlType type : {GgmlType::F32, GgmlType::Q8_0, GgmlType::Q4_0}) {
        EXPECT_EQ(half_gemm_kernel(type, CpuIsa::Avx512), nullptr) << ggml_type_name(type);
    }
    EXPECT_EQ(half_gemm_kernel(GgmlType::F16, CpuIsa::Avx2), nullptr);
    EXPECT_EQ(half_gemm_kernel(GgmlType::F16, CpuIsa::Scalar), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Types, HalfGemmKernelTest, ::testing::Values(GgmlType::F16, GgmlType::BF16),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

}  // namespace
}  // namespace inferscope
