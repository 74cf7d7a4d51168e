// The decode products of gpu/vk_matvec.h (matvec.comp) against the CPU backend's matmul on
// random inputs: every weight type, 1..8 tokens, odd shapes, the
// fused RMSNorm prologue, accumulation, several matrices in one dispatch, the gated FFN
// activations, the post-norm epilogue, row-split matrices and launches folded into Y.
// Validation layer on.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <string>
#include <tuple>
#include <utility>

#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/ops.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "gpu/op_harness.h"
#include "gpu/vk_tuning.h"
#include "gpu_cpu_reference.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

using testing::nmse;
using testing::random_weight;
using testing::random_floats;
using Options = gpu::OpHarness::MatvecOptions;

// The CPU reference: each row of x RMS-normed by `norm_weight` (when given), then x * W^T.
std::vector<float> cpu_product(const WeightMatrix& w, std::vector<float> x, int64_t n, const Options& options = {}) {
    if (!options.norm_weight.empty()) {
        const std::vector<float> raw = x;
        for (int64_t t = 0; t < n; ++t) {
            rms_norm_row(raw.data() + t * w.cols, options.norm_weight.data(), w.cols, options.eps, x.data() + t * w.cols);
        }
    }
    ThreadPool pool(1);
    MatmulScratch scratch;
    std::vector<float> y(static_cast<size_t>(n * w.rows));
    matmul(w, x.data(), n, y.data(), pool, scratch);
    if (options.accumulate) {
        for (size_t i = 0; i < y.size(); ++i) y[i] += options.y_initial[i];
    }
    return y;
}

class GpuMatvecTest : public ::testing::Test {
protected:
    void SetUp() override { INFERSCOPE_MAKE_OR_SKIP_GPU(gpu_, std::make_unique<gpu::OpHarness>(true)); }
    void TearDown() override {
        if (gpu_) {
            EXPECT_EQ(gpu_->validation_errors(), 0) << "Vulkan validation errors (printed above)";
        }
    }
    // Options with a random norm weight of `cols` when `norm`, random y values accumulated into when `accumulate`.
    Options options(int64_t cols, int64_t outputs, bool norm, bool accumulate) {
        Options o;
        if (norm) o.norm_weight = random_floats(static_cast<size_t>(cols), rng_, 2.0f);
        o.eps = 1e-5f;
        o.accumulate = accumulate;
        if (accumulate) o.y_initial = random_floats(static_cast<size_t>(outputs), rng_);
        return o;
    }

    std::unique_ptr<gpu::OpHarness> gpu_;
    std::mt19937 rng_{7};
};

struct MatvecCase {
    GgmlType type;
    // F16/BF16: both round the input alike (summation order; a rounding moved by a last-bit
    // difference of a normed input: lavapipe 3e-11). Quantized types: F32 inputs here or the CPU's
    // encoding (GpuMatvecIntegerDot holds that to its own bounds).
    double max_nmse;
    // Every token count 1..8 on the first shape, for one type of each decoding path; the others
    // share those paths' per-token loops, so three counts do (each count is a pipeline of its
    // own, compiled once, slowly, on lavapipe).
    bool every_token_count = false;
};

class GpuMatvec : public GpuMatvecTest, public ::testing::WithParamInterface<MatvecCase> {};

TEST_P(GpuMatvec, MatchesCpuForOneToEightTokensWithAndWithoutNorm) {
    const MatvecCase c = GetParam();
    const uint32_t block = ggml_type_traits(c.type).block_elements;
    // Rows that are multiples of nothing; widths from one block to ffn_down's 4,864, and for the
    // float types widths that are not multiples of 8 (rows not 16-byte aligned).
    // 16,411 rows: a tall matrix (an output projection), whose teams compute several rows at once.
    std::vector<std::pair<int64_t, int64_t>> shapes = {
        {67, std::max<int64_t>(block, 32)}, {131, 896}, {29, 4864}, {16411, std::max<int64_t>(block, 64)}};
    if (block == 256) shapes[1].second = 1024;
    if (block == 1) shapes.insert(shapes.end(), {{45, 172}, {23, 37}});
    for (size_t shape = 0; shape < shapes.size(); ++shape) {
        const auto [rows, cols] = shapes[shape];
        std::vector<uint8_t> bytes;
        const WeightMatrix w = random_weight(c.type, rows, cols, rng_, bytes);
        // Token counts with and without the norm on the first shape; a few on the others.
        std::vector<int64_t> token_counts = {1, 4, 7};
        if (shape == 0)
            token_counts = c.every_token_count ? std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7, 8} : std::vector<int64_t>{1, 2, 5};
        for (int64_t n : token_counts) {
            for (bool norm : {false, true}) {
                if (shape > 0 && norm != (n % 2 == 0)) continue;
                const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng_, 3.0f);
                const Options o = options(cols, n * rows, norm, n % 2 == 1);
                const double e = nmse(gpu_->matvec(w, x, n, o), cpu_product(w, x, n, o));
                EXPECT_LT(e, c.max_nmse) << ggml_type_name(c.type) << " " << rows << "x" << cols << " n=" << n
                                         << (norm ? " normed" : "") << (o.accumulate ? " accumulated" : "");
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, GpuMatvec,
                         ::testing::Values(MatvecCase{GgmlType::F32, 1e-10, true}, MatvecCase{GgmlType::F16, 1e-9, true},
                                           MatvecCase{GgmlType::BF16, 1e-9}, MatvecCase{GgmlType::Q8_0, 5e-4, true},
                                           MatvecCase{GgmlType::Q4_0, 5e-4, true}, MatvecCase{GgmlType::Q4_1, 5e-4},
                                           MatvecCase{GgmlType::Q5_0, 5e-4}, MatvecCase{GgmlType::Q5_1, 5e-4},
                                           MatvecCase{GgmlType::IQ4_NL, 5e-4}, MatvecCase{GgmlType::Q4_K, 5e-4, true},
                                           MatvecCase{GgmlType::Q5_K, 5e-4}, MatvecCase{GgmlType::Q6_K, 5e-4},
                                           MatvecCase{GgmlType::IQ4_XS, 5e-4}, MatvecCase{GgmlType::Q2_K, 5e-4},
                                           MatvecCase{GgmlType::Q3_K, 5e-4}),
                         [](const auto& info) { return std::string(ggml_type_name(info.param.type)); });

TEST_F(GpuMatvecTest, MultiWritesEachMatrixRowsToItsOwnOutput) {
    // q, k, v-like: rows of different counts, 2 and 3 matrices, with and without the norm.
    for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q6_K}) {
        std::vector<uint8_t> qb, kb, vb;
        const int64_t cols = ggml_type_traits(type).block_elements == 256 ? 512 : 192;
        const WeightMatrix q = random_weight(type, 70, cols, rng_, qb);
        const WeightMatrix k = random_weight(type, 13, cols, rng_, kb);
        const WeightMatrix v = random_weight(type, 21, cols, rng_, vb);
        for (const std::vector<const WeightMatrix*>& ws :
             {std::vector<const WeightMatrix*>{&q, &k}, std::vector<const WeightMatrix*>{&q, &k, &v}}) {
            for (int64_t n : {1, 5, 8}) {
                const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng_, 3.0f);
                const Options o = options(cols, 0, n != 5, false);
                const std::vector<std::vector<float>> ys = gpu_->matvec_multi(ws, x, n, o);
                ASSERT_EQ(ys.size(), ws.size());
                for (size_t i = 0; i < ws.size(); ++i) {
                    EXPECT_LT(nmse(ys[i], cpu_product(*ws[i], x, n, o)), 5e-4)
                        << ggml_type_name(type) << " matrix " << i << " of " << ws.size() << " n=" << n;
                }
            }
        }
    }
}

TEST(GpuMatvecMixed, FormatsEncodingTheirInputAlikeShareADispatchBitForBit) {
    // q, k, v of block formats whose inputs one encoding serves (Q8_K; Q8_0; Q8_1, also for
    // Q8_0 weights), in one dispatch, each read in its own format: every output equal bit for bit
    // to its matrix's own dispatch (normed inputs; F32, and encoded where the device has integer
    // dot products).
    struct Mix {
        std::array<GgmlType, 3> types;
        int64_t cols;
    };
    const std::vector<Mix> mixes = {{{GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K}, 512},  // Q4_K_M's attention
                                    {{GgmlType::Q5_0, GgmlType::Q5_0, GgmlType::Q8_0}, 192},  // its rows of 896
                                    {{GgmlType::IQ4_NL, GgmlType::Q4_0, GgmlType::Q8_0}, 96},
                                    {{GgmlType::IQ4_XS, GgmlType::Q5_K, GgmlType::Q3_K}, 256},
                                    {{GgmlType::Q4_1, GgmlType::Q5_1, GgmlType::Q4_1}, 64},
                                    {{GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q8_0}, 192},      // Q5_K_M's on rows of 896
                                    {{GgmlType::IQ4_NL, GgmlType::IQ4_NL, GgmlType::Q5_1}, 192},  // IQ4_XS's there
                                    {{GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q5_0}, 96}};      // Q8_1 for a later matrix
    std::mt19937 rng(17);
    for (bool integer_dot : {true, false}) {
        std::unique_ptr<gpu::OpHarness> gpu;
        INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true, 0, "", integer_dot));
        for (const Mix& mix : mixes) {
            std::array<std::vector<uint8_t>, 3> bytes;
            const std::array<int64_t, 3> rows = {70, 13, 21};
            const std::array<WeightMatrix, 3> ws = {random_weight(mix.types[0], rows[0], mix.cols, rng, bytes[0]),
                                                    random_weight(mix.types[1], rows[1], mix.cols, rng, bytes[1]),
                                                    random_weight(mix.types[2], rows[2], mix.cols, rng, bytes[2])};
            for (int64_t n : {1, 4, 8}) {
                const std::vector<float> x = random_floats(static_cast<size_t>(n * mix.cols), rng, 3.0f);
                Options o;
                o.norm_weight = random_floats(static_cast<size_t>(mix.cols), rng, 2.0f);
                const std::vector<std::vector<float>> ys = gpu->matvec_multi({&ws[0], &ws[1], &ws[2]}, x, n, o);
                ASSERT_EQ(ys.size(), 3u);
                for (size_t i = 0; i < 3; ++i) {
                    EXPECT_EQ(ys[i], gpu->matvec(ws[i], x, n, o)) << ggml_type_name(mix.types[i]) << " matrix " << i
                                                                  << ", n=" << n << (gpu->integer_dot() ? ", integer dot" : "");
                    EXPECT_LT(nmse(ys[i], cpu_product(ws[i], x, n, o)), 5e-4) << ggml_type_name(mix.types[i]);
                }
            }
        }
        EXPECT_EQ(gpu->validation_errors(), 0) << "Vulkan validation errors (printed above)";
    }
}

// act(x^ * gate^T) * (x^ * up^T) on the CPU: its products, then its activation.
std::vector<float> cpu_gated(const WeightMatrix& gate, const WeightMatrix& up, const std::vector<float>& x, int64_t n,
                             FfnActivation activation, const Options& o) {
    std::vector<float> g = cpu_product(gate, x, n, o);
    const std::vector<float> u = cpu_product(up, x, n, o);
    if (activation == FfnActivation::GeluTanh) {
        geglu_inplace(g.data(), u.data(), static_cast<int64_t>(g.size()));
    } else {
        swiglu_inplace(g.data(), u.data(), static_cast<int64_t>(g.size()));
    }
    return g;
}

TEST_F(GpuMatvecTest, GatedSiluAndGeluEqualCpuProductsThenActivation) {
    // 16,400 rows: a feed-forward as wide as a large model's, whose teams compute several rows at
    // once. Gate and up of two formats whose input one encoding serves share the dispatch too
    // (Q8_0 gate and Q5_1 up: Q8_1, for a later matrix than the first).
    for (const auto& [type, up_type, rows] :
         std::vector<std::tuple<GgmlType, GgmlType, int64_t>>{{GgmlType::F32, GgmlType::F32, 75},
                                                              {GgmlType::F16, GgmlType::F16, 75},
                                                              {GgmlType::BF16, GgmlType::BF16, 75},
                                                              {GgmlType::Q4_0, GgmlType::Q4_0, 75},
                                                              {GgmlType::Q5_K, GgmlType::Q5_K, 75},
                                                              {GgmlType::Q8_0, GgmlType::Q8_0, 16400},
                                                              {GgmlType::Q4_K, GgmlType::Q6_K, 75},
                                                              {GgmlType::Q5_0, GgmlType::Q8_0, 75},
                                                              {GgmlType::Q8_0, GgmlType::Q5_1, 75}}) {
        std::vector<uint8_t> gb, ub;
        const int64_t cols = ggml_type_traits(type).block_elements == 256 ? 256 : 160;
        const WeightMatrix gate = random_weight(type, rows, cols, rng_, gb);
        const WeightMatrix up = random_weight(up_type, rows, cols, rng_, ub);
        for (FfnActivation activation : {FfnActivation::Silu, FfnActivation::GeluTanh}) {
            for (int64_t n : {1, 3, 8}) {
                const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng_);
                const Options o = options(cols, 0, n != 3, false);
                // GeGLU rounds the gate to F16: a last-bit difference of the product can move it a whole step.
                const double bound = type == GgmlType::F32 ? 1e-6 : 5e-4;
                const double e =
                    nmse(gpu_->matvec_gated(gate, up, x, n, activation, o), cpu_gated(gate, up, x, n, activation, o));
                EXPECT_LT(e, bound) << ggml_type_name(type) << "/" << ggml_type_name(up_type)
                                    << (activation == FfnActivation::Silu ? " SiLU" : " GELU") << " n=" << n;
            }
        }
    }
}

// The CPU reference of `calls` post-normed products over one residual: each adds rms_norm(x * W^T) * weight.
std::vector<float> cpu_post_normed(const WeightMatrix& w, const std::vector<float>& x, int64_t n, std::vector<float> residual,
                                   const std::vector<float>& weight, float eps, int calls) {
    const std::vector<float> product = cpu_product(w, x, n);
    std::vector<float> normed(product.size());
    for (int64_t t = 0; t < n; ++t) {
        rms_norm_row(product.data() + t * w.rows, weight.data(), w.rows, eps, normed.data() + t * w.rows);
    }
    for (int i = 0; i < calls; ++i) {
        for (size_t e = 0; e < residual.size(); ++e) residual[e] += normed[e];
    }
    return residual;
}

// Gemma's post-norms in the product's dispatch: three dispatches in a row over one counter each
// add the normed rows once (the last workgroup of each, and only it, adds them, and leaves the
// counter at zero for the next), bit for bit as the product and rms_norm.comp apart do.
TEST_F(GpuMatvecTest, PostNormedProductsAddTheirNormedRowsToTheResidual) {
    const float eps = 1e-6f;
    const int calls = 3;
    for (const auto& [type, rows, cols] : std::vector<std::tuple<GgmlType, int64_t, int64_t>>{
             {GgmlType::F16, 1001, 200}, {GgmlType::F16, 1152, 256}, {GgmlType::Q8_0, 1152, 256}, {GgmlType::Q4_K, 640, 512}}) {
        std::vector<uint8_t> bytes;
        const WeightMatrix w = random_weight(type, rows, cols, rng_, bytes);
        const std::vector<float> weight = random_floats(static_cast<size_t>(rows), rng_, 2.0f);
        for (int64_t n : {1, 3, 8}) {
            const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng_);
            const std::vector<float> residual = random_floats(static_cast<size_t>(n * rows), rng_, 4.0f);
            const std::vector<float> fused = gpu_->matvec_post_normed(w, x, n, residual, weight, eps, calls);
            const std::vector<float> normed_apart = gpu_->rms_norm(gpu_->matvec(w, x, n, {}), weight, eps);
            std::vector<float> apart = residual;
            for (int i = 0; i < calls; ++i) {
                for (size_t e = 0; e < apart.size(); ++e) apart[e] += normed_apart[e];
            }
            const std::string what = std::string(ggml_type_name(type)) + " " + std::to_string(rows) + " x " +
                                     std::to_string(cols) + " n=" + std::to_string(n);
            EXPECT_EQ(fused, apart) << what;
            EXPECT_LT(nmse(fused, cpu_post_normed(w, x, n, residual, weight, eps, calls)), 5e-4) << what;
        }
    }
}

TEST_F(GpuMatvecTest, SplitMatricesEqualOneBuffer) {
    // Parts of 5 rows: the path of tensors larger than maxStorageBufferRange.
    for (GgmlType type : {GgmlType::F16, GgmlType::Q8_0}) {
        std::vector<uint8_t> gb, ub;
        const WeightMatrix gate = random_weight(type, 23, 256, rng_, gb);
        const WeightMatrix up = random_weight(type, 23, 256, rng_, ub);
        for (int64_t n : {1, 6}) {
            const std::vector<float> x = random_floats(static_cast<size_t>(n * 256), rng_);
            Options split = options(256, n * 23, true, true);
            const Options whole = split;
            split.max_part_bytes = 5 * gate.row_bytes;
            EXPECT_EQ(gpu_->matvec(gate, x, n, split), gpu_->matvec(gate, x, n, whole)) << ggml_type_name(type);
            EXPECT_EQ(gpu_->matvec_gated(gate, up, x, n, FfnActivation::Silu, split),
                      gpu_->matvec_gated(gate, up, x, n, FfnActivation::Silu, whole))
                << ggml_type_name(type);
            EXPECT_LT(nmse(gpu_->matvec(gate, x, n, split), cpu_product(gate, x, n, split)), 5e-4);
        }
    }
}

TEST(GpuMatvecTuning, EveryTuningEntrysShapesMatchCpu) {
    // Each entry of the tuning table forced on this device: its team and workgroup sizes on a
    // layer matrix, a normed one and a tall one, for the block and the float decoding paths.
    std::mt19937 rng(13);
    for (const gpu::KernelTuning& tuning : gpu::kernel_tuning_table()) {
        std::unique_ptr<gpu::OpHarness> gpu;
        INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true, 0, tuning.name));
        for (GgmlType type : {GgmlType::F16, GgmlType::Q4_K}) {
            for (const auto& [rows, cols] : std::vector<std::pair<int64_t, int64_t>>{{131, 1024}, {16411, 256}}) {
                std::vector<uint8_t> bytes;
                const WeightMatrix w = random_weight(type, rows, cols, rng, bytes);
                for (int64_t n : {1, 3}) {
                    const std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng, 3.0f);
                    Options o;
                    if (n == 3) o.norm_weight = random_floats(static_cast<size_t>(cols), rng, 2.0f);
                    EXPECT_LT(nmse(gpu->matvec(w, x, n, o), cpu_product(w, x, n, o)), 5e-4)
                        << tuning.name << " " << ggml_type_name(type) << " " << rows << "x" << cols << " n=" << n;
                }
            }
        }
        EXPECT_EQ(gpu->validation_errors(), 0) << tuning.name << ": Vulkan validation errors (printed above)";
    }
}

TEST(GpuMatvecIntegerDot, ProductsEncodeTheirInputAsTheCpuDoes) {
    // The CPU multiplies Q8_0, Q4_0, Q5_0 and IQ4_NL weights by inputs encoded as Q8_0, Q4_1 and
    // Q5_1 by Q8_1 (their minimums by each block's scaled code sum, rounded to F16), the K-quants
    // and IQ4_XS by inputs encoded as Q8_K. With integer dot products the GPU does
    // too, in every product kernel: the integer-dot mat-vec, the F32 mat-vec where the encoded
    // rows do not fit shared memory (ffn_down's width at 5 tokens on lavapipe's 32 KiB, a 7B
    // ffn_down's at 8 tokens anywhere), and the tiled product from 9 tokens on. It should then
    // agree with the CPU far more closely than the F32 path (the harness with integer dot
    // products off) does.
    std::unique_ptr<gpu::OpHarness> with_dot;
    INFERSCOPE_MAKE_OR_SKIP_GPU(with_dot, std::make_unique<gpu::OpHarness>(true, 0, "", true));
    if (!with_dot->integer_dot()) GTEST_SKIP() << "the device lacks integer dot products or subgroup arithmetic";
    gpu::OpHarness without_dot(true, 0, "", false);
    ASSERT_FALSE(without_dot.integer_dot());
    std::mt19937 rng(17);
    int dot_products = 0, encoded_f32_products = 0;
    struct Case {
        int64_t rows, cols, n;
        // Else only Q8_0, Q4_0 (Q8_0 inputs), Q4_K and Q6_K (Q8_K inputs): the others share
        // their paths (each case compiles pipelines). The K-quants take the cases whose rows
        // are whole 256-blocks.
        bool every_type;
    };
    // The tiles: more than one tile of tokens (70, 130) and, for Q8_K, rows of several blocks.
    const std::vector<Case> cases = {{67, 32, 1, false},   {67, 32, 8, true},     {131, 896, 2, false},  {131, 896, 5, true},
                                     {29, 4864, 1, true},  {29, 4864, 5, true},   {16411, 64, 3, false}, {45, 256, 12, true},
                                     {45, 256, 20, false}, {512, 256, 15, false}, {256, 640, 15, false}, {29, 11008, 8, true},
                                     {19, 768, 3, false},  {45, 512, 70, true},   {70, 768, 130, false}};
    const std::set<GgmlType> main_types = {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K};
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::IQ4_NL, GgmlType::Q4_1, GgmlType::Q5_1,
                          GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q5_K, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS}) {
        const bool super_blocks = ggml_type_traits(type).block_elements == 256;
        double worst_encoded = 0, worst_normed = 0, worst_f32 = 0;
        for (const Case& c : cases) {
            if (!c.every_type && main_types.count(type) == 0) continue;
            if (super_blocks && c.cols % 256 != 0) continue;
            std::vector<uint8_t> bytes;
            const WeightMatrix w = random_weight(type, c.rows, c.cols, rng, bytes);
            const std::vector<float> x = random_floats(static_cast<size_t>(c.n * c.cols), rng, 3.0f);
            const bool product = c.n <= 8;  // the decode products; else the prompt's tiles (no norm prologue)
            Options o;
            if (product && c.n % 2 == 1) o.norm_weight = random_floats(static_cast<size_t>(c.cols), rng, 2.0f);
            const std::vector<float> cpu = cpu_product(w, x, c.n, o);
            const bool dot = product && with_dot->matvec_uses_integer_dot(type, c.cols, c.n);
            dot_products += dot ? 1 : 0;
            encoded_f32_products += product && !dot ? 1 : 0;
            const double e_encoded = nmse(product ? with_dot->matvec(w, x, c.n, o) : with_dot->matmul(w, x, c.n), cpu);
            const double e_f32 = nmse(product ? without_dot.matvec(w, x, c.n, o) : without_dot.matmul(w, x, c.n), cpu);
            const bool normed = !o.norm_weight.empty();
            const std::string what = std::string(ggml_type_name(type)) + " " + std::to_string(c.rows) + "x" +
                                     std::to_string(c.cols) + " n=" + std::to_string(c.n) +
                                     (dot ? " (integer dot products)" : " (F32 arithmetic)") + (normed ? ", normed" : "");
            // Measured on lavapipe: 1e-15 to 1e-13 encoded (the summation order), 1e-5 in F32. A
            // code moved by a step costs 1e-9 or more: normed inputs may move one, as the GPU's
            // inverse RMS may differ from the CPU's in its last bit.
            EXPECT_LT(e_encoded, normed ? 1e-7 : 1e-11) << what << "; F32 path: " << e_f32;
            EXPECT_LT(e_f32, 5e-4) << what;
            double& worst = normed ? worst_normed : worst_encoded;
            worst = std::max(worst, e_encoded);
            worst_f32 = std::max(worst_f32, e_f32);
        }
        std::printf("[ measured ] %s: worst NMSE against the CPU %.2g with encoded inputs (%.2g normed), %.2g with F32 inputs\n",
                    ggml_type_name(type).data(), worst_encoded, worst_normed, worst_f32);
    }
    // A block whose largest magnitude is so small that its Q8_K factor overflows contributes 0
    // on the CPU (codes and scale 0); on every path of the GPU too, not NaN.
    {
        // The integer-dot build, the tiles, and the F32 build (8 rows of 11,008 never fit).
        for (const auto& [cols, n] : std::vector<std::pair<int64_t, int64_t>>{{512, 1}, {512, 12}, {11008, 8}}) {
            std::vector<uint8_t> bytes;
            const WeightMatrix w = random_weight(GgmlType::Q4_K, 29, cols, rng, bytes);
            std::vector<float> x = random_floats(static_cast<size_t>(n * cols), rng, 3.0f);
            for (int64_t t = 0; t < n; ++t) std::fill_n(x.begin() + t * cols + 256, 256, 1e-37f);
            const std::vector<float> cpu = cpu_product(w, x, n);
            const std::vector<float> gpu = n <= 8 ? with_dot->matvec(w, x, n, {}) : with_dot->matmul(w, x, n);
            const std::string what = "a block of 1e-37, " + std::to_string(cols) + " columns, n=" + std::to_string(n);
            ASSERT_TRUE(std::all_of(gpu.begin(), gpu.end(), [](float v) { return std::isfinite(v); })) << what;
            EXPECT_LT(nmse(gpu, cpu), 1e-11) << what;
        }
    }
    EXPECT_GT(dot_products, 0) << "no product fitted the integer-dot build's shared memory";
    // 8 rows of 11,008 (a 7B ffn_down's) encoded take 110,080 bytes: more than any device's shared memory.
    EXPECT_GT(encoded_f32_products, 0) << "the F32 build's encoding was not exercised";
    EXPECT_EQ(with_dot->validation_errors(), 0) << "Vulkan validation errors (printed above)";
    EXPECT_EQ(without_dot.validation_errors(), 0) << "Vulkan validation errors (printed above)";
}

// numerator / denominator from a Newton step on the residual whose fma rounds twice, as Vulkan
// allows (lavapipe's does): one ULP off for about one denominator in seven.
float twice_rounded_newton_quotient(float numerator, float denominator) {
    const float inverse = 1.0f / denominator;
    const float q = numerator * inverse;
    const float residual = -q * denominator + numerator;  // built with -ffp-contract=off: two roundings
    return residual * inverse + q;
}

// A float v with v * factor == k + 1/2 exactly, for some k of the given parity, |k| < 127.
float exact_tie(float factor, bool odd, std::mt19937& rng) {
    std::uniform_int_distribution<int> half_k(5, 60);
    for (;;) {
        const float tie = static_cast<float>(2 * half_k(rng) + (odd ? 1 : 0)) + 0.5f;
        float v = tie / factor;
        for (int step = 0; step < 64; ++step, v = std::nextafter(v, 2 * v)) {
            if (v * factor == tie) return v;
        }
    }
}

// One token's `cols` input values in blocks of `block` (32 for Q8_0/Q8_1, 256 for Q8_K). Each
// block's largest magnitude has a factor (127 / amax; Q8_K: -127 / the signed maximum) that the
// twice-rounded Newton step misses (the first two blocks: factors at and just below 64), and two
// of its values are exact ties under the correctly rounded factor: one at k + 1/2 for an odd k,
// which rounds away from k, one for an even k, which stays. A factor one ULP off either way moves
// one of their codes.
std::vector<float> input_with_ties(int64_t cols, int block, bool q8_k, std::mt19937& rng) {
    std::uniform_real_distribution<float> magnitude(1.0f, 4.0f), unit(-1.0f, 1.0f);
    std::uniform_int_distribution<int> position(0, block - 1);
    std::vector<float> x(static_cast<size_t>(cols));
    for (int64_t b = 0; b < cols / block; ++b) {
        const float numerator = q8_k ? -127.0f : 127.0f;
        float largest, factor;
        if (b < 2) {
            // A factor of 64, whose float below is twice as close as the one above, and the float below it.
            largest = (b == 0 ? 127.0f / 64 : std::nextafter(127.0f / 64, 2.0f)) * (unit(rng) < 0 ? -1.0f : 1.0f);
            factor = numerator / (q8_k ? largest : std::fabs(largest));
        } else {
            do {
                largest = magnitude(rng) * (unit(rng) < 0 ? -1.0f : 1.0f);
                factor = numerator / (q8_k ? largest : std::fabs(largest));
            } while (twice_rounded_newton_quotient(numerator, q8_k ? largest : std::fabs(largest)) == factor);
        }
        float* values = x.data() + b * block;
        for (int i = 0; i < block; ++i) values[i] = 0.9f * largest * unit(rng);
        const int largest_at = position(rng);
        int odd_at = position(rng), even_at = position(rng);
        while (odd_at == largest_at) odd_at = position(rng);
        while (even_at == largest_at || even_at == odd_at) even_at = position(rng);
        values[largest_at] = largest;
        values[odd_at] = exact_tie(factor, true, rng);
        values[even_at] = exact_tie(factor, false, rng);
    }
    return x;
}

TEST(GpuMatvecIntegerDot, CodesAtExactTiesAreTheCpus) {
    // Random inputs rarely hold a value whose product with the factor is an exact tie, the only
    // place where a factor one ULP off changes a code; these hold two in every block, under
    // factors that a refinement relying on a fused fma gets wrong on a device that does not fuse.
    std::unique_ptr<gpu::OpHarness> gpu;
    INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true, 0, "", true));
    if (!gpu->integer_dot()) GTEST_SKIP() << "the device lacks integer dot products or subgroup arithmetic";
    std::mt19937 rng(23);
    double worst = 0;
    for (GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_1, GgmlType::Q4_K}) {
        const bool q8_k = type == GgmlType::Q4_K;
        // The integer-dot mat-vec (1 and 5 tokens), the F32 mat-vec (8 x 11,008) and the tiles (12).
        for (const auto& [cols, n] : std::vector<std::pair<int64_t, int64_t>>{{1024, 1}, {1024, 5}, {11008, 8}, {1024, 12}}) {
            std::vector<uint8_t> bytes;
            const WeightMatrix w = random_weight(type, 29, cols, rng, bytes);
            std::vector<float> x;
            for (int64_t t = 0; t < n; ++t) {
                const std::vector<float> row = input_with_ties(cols, q8_k ? 256 : 32, q8_k, rng);
                x.insert(x.end(), row.begin(), row.end());
            }
            const std::vector<float> cpu = cpu_product(w, x, n);
            const std::vector<float> gpu_y = n <= 8 ? gpu->matvec(w, x, n, {}) : gpu->matmul(w, x, n);
            // A moved code costs about 1e-7 here; the summation order 1e-13.
            const double e = nmse(gpu_y, cpu);
            EXPECT_LT(e, 1e-11) << ggml_type_name(type) << " " << cols << " columns, n=" << n;
            worst = std::max(worst, e);
        }
    }
    std::printf("[ measured ] worst NMSE against the CPU: %.2g\n", worst);
    EXPECT_EQ(gpu->validation_errors(), 0) << "Vulkan validation errors (printed above)";
}

TEST(GpuMatvecIntegerDot, RowsTooLongForTheirQ8KBlockFactorsAreAClearError) {
    // The F32 build keeps each token's Q8_K block factors and scales in its 4,096 partial sums,
    // two floats per block: a row of 512 blocks fits exactly for four tokens, not for five.
    std::unique_ptr<gpu::OpHarness> gpu;
    INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true, 0, "", true));
    if (!gpu->integer_dot()) GTEST_SKIP() << "the device lacks integer dot products or subgroup arithmetic";
    std::mt19937 rng(5);
    std::vector<uint8_t> bytes;
    const int64_t cols = 512 * 256;
    const WeightMatrix w = random_weight(GgmlType::Q4_K, 3, cols, rng, bytes);
    const std::vector<float> x4 = random_floats(static_cast<size_t>(4 * cols), rng, 3.0f);
    EXPECT_LT(nmse(gpu->matvec(w, x4, 4, {}), cpu_product(w, x4, 4)), 1e-11);
    const std::vector<float> x5 = random_floats(static_cast<size_t>(5 * cols), rng, 3.0f);
    try {
        gpu->matvec(w, x5, 5, {});
        ADD_FAILURE() << "5 rows of " << cols << " values were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("too long"), std::string::npos) << e.what();
    }
}

TEST(GpuMatvecFolded, LaunchesAboveTheXLimitFoldIntoY) {
    // At most 7 workgroups along X: a tall output matrix (the 896 x 151,936 output scaled
    // down), the fused q/k/v and the gated FFN all fold their launches into Y.
    std::unique_ptr<gpu::OpHarness> gpu;
    INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true, 7));
    std::mt19937 rng(11);
    std::vector<uint8_t> ob, kb, vb;
    const WeightMatrix out = random_weight(GgmlType::Q4_0, 3001, 64, rng, ob);
    const WeightMatrix k = random_weight(GgmlType::Q4_0, 37, 64, rng, kb);
    const WeightMatrix v = random_weight(GgmlType::Q4_0, 37, 64, rng, vb);
    for (int64_t n : {1, 4}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * 64), rng);
        EXPECT_LT(nmse(gpu->matvec(out, x, n, {}), cpu_product(out, x, n)), 5e-4) << "n=" << n;
        const std::vector<std::vector<float>> ys = gpu->matvec_multi({&out, &k, &v}, x, n, {});
        EXPECT_LT(nmse(ys[0], cpu_product(out, x, n)), 5e-4);
        EXPECT_LT(nmse(ys[2], cpu_product(v, x, n)), 5e-4);
        EXPECT_LT(
            nmse(gpu->matvec_gated(out, out, x, n, FfnActivation::Silu, {}), cpu_gated(out, out, x, n, FfnActivation::Silu, {})),
            5e-4);
        // The workgroups past the last row return before they count: the last of those that do still adds.
        const std::vector<float> residual = random_floats(static_cast<size_t>(n * 3001), rng);
        const std::vector<float> weight = random_floats(3001, rng);
        EXPECT_LT(nmse(gpu->matvec_post_normed(out, x, n, residual, weight, 1e-6f, 2),
                       cpu_post_normed(out, x, n, residual, weight, 1e-6f, 2)),
                  5e-4);
    }
    EXPECT_EQ(gpu->validation_errors(), 0) << "Vulkan validation errors (printed above)";
}

}  // namespace
}  // namespace inferscope
