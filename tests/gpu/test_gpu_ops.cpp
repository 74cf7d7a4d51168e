// Each Vulkan kernel against the CPU backend's operation on fresh random inputs, with an
// error bound per weight type on the normalised mean squared error (as ggml's
// test-backend-ops does). The validation layer is on; any error it reports fails the test.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/ops.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "gpu/op_harness.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

using testing::nmse;
using testing::random_floats;

class GpuOps : public ::testing::Test {
protected:
    void SetUp() override { INFERSCOPE_MAKE_OR_SKIP_GPU(gpu_, std::make_unique<gpu::OpHarness>(true)); }
    void TearDown() override {
        if (gpu_) {
            EXPECT_EQ(gpu_->validation_errors(), 0) << "Vulkan validation errors (printed above)";
        }
    }

    std::unique_ptr<gpu::OpHarness> gpu_;
    std::mt19937 rng_{42};
};

// A weight of `rows` x `cols` random values stored as `type`; `bytes` owns the data.
WeightMatrix random_weight(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng, std::vector<uint8_t>& bytes) {
    WeightMatrix w;
    w.name = "test";
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(cols));
    bytes.assign(w.row_bytes * static_cast<uint64_t>(rows), 0);
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> row = random_floats(static_cast<size_t>(cols), rng);
        quantize_row(type, row.data(), bytes.data() + static_cast<uint64_t>(r) * w.row_bytes, cols);
    }
    w.data = bytes.data();
    return w;
}

std::vector<float> cpu_matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n) {
    ThreadPool pool(1);
    MatmulScratch scratch;
    std::vector<float> y(static_cast<size_t>(n * w.rows));
    matmul(w, x.data(), n, y.data(), pool, scratch);
    return y;
}

struct MatmulCase {
    GgmlType type;
    double max_nmse;  // the CPU rounds activations to F16 / quantizes them to Q8; the GPU keeps F32
};

class GpuMatmul : public GpuOps, public ::testing::WithParamInterface<MatmulCase> {};

TEST_P(GpuMatmul, MatchesCpuForDecodeAndPrefillShapes) {
    const MatmulCase c = GetParam();
    std::vector<uint8_t> bytes;
    // 67 rows: not a multiple of the rows per workgroup; 11 tokens: not a multiple of 8
    // (matrix-vector kernel); 70: the tiled kernel with partial tiles in both directions.
    const WeightMatrix w = random_weight(c.type, 67, 512, rng_, bytes);
    for (int64_t n : {1, 11, 70}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * w.cols), rng_);
        const double e = nmse(gpu_->matmul(w, x, n), cpu_matmul(w, x, n));
        EXPECT_LT(e, c.max_nmse) << ggml_type_name(c.type) << " n=" << n;
        std::printf("[ measured ] matmul %s n=%lld: NMSE %.3g\n", std::string(ggml_type_name(c.type)).c_str(),
                    static_cast<long long>(n), e);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, GpuMatmul,
                         ::testing::Values(MatmulCase{GgmlType::F32, 1e-10}, MatmulCase{GgmlType::F16, 1e-6},
                                           MatmulCase{GgmlType::Q8_0, 5e-4}, MatmulCase{GgmlType::Q4_0, 5e-4},
                                           MatmulCase{GgmlType::Q4_K, 5e-4}, MatmulCase{GgmlType::Q6_K, 5e-4},
                                           MatmulCase{GgmlType::IQ4_NL, 5e-4}, MatmulCase{GgmlType::IQ4_XS, 5e-4}),
                         [](const auto& info) { return std::string(ggml_type_name(info.param.type)); });

TEST_F(GpuOps, MatmulOfFloatRowsWithATail) {
    // 172 columns (stories260K's FFN): chunks of 8 elements end in a partial one.
    std::vector<uint8_t> bytes;
    const WeightMatrix w = random_weight(GgmlType::F32, 64, 172, rng_, bytes);
    for (int64_t n : {3, 20}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * w.cols), rng_);
        EXPECT_LT(nmse(gpu_->matmul(w, x, n), cpu_matmul(w, x, n)), 1e-10) << "n=" << n;
    }
}

TEST_F(GpuOps, MatmulSplitIntoSeveralBuffersEqualsOneBuffer) {
    // Parts of 5 rows: the path of tensors larger than maxStorageBufferRange.
    std::vector<uint8_t> bytes;
    const WeightMatrix w = random_weight(GgmlType::Q8_0, 23, 256, rng_, bytes);
    for (int64_t n : {9, 33}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * w.cols), rng_);
        EXPECT_EQ(gpu_->matmul(w, x, n, 5 * w.row_bytes), gpu_->matmul(w, x, n)) << "n=" << n;
    }
}

TEST_F(GpuOps, EmbeddingGatherEqualsDequantizedRowsAcrossParts) {
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::Q8_0, GgmlType::Q4_0}) {
        std::vector<uint8_t> bytes;
        const WeightMatrix w = random_weight(type, 40, 64, rng_, bytes);
        const std::vector<int32_t> tokens = {0, 39, 7, 7, 21, 13};
        std::vector<float> expected(tokens.size() * 64);
        for (size_t i = 0; i < tokens.size(); ++i) dequantize_row(type, w.row(tokens[i]), expected.data() + i * 64, 64);
        // Parts of 8 rows: tokens land in different buffers.
        EXPECT_EQ(gpu_->embed(w, tokens, 8 * w.row_bytes), expected) << ggml_type_name(type);
    }
}

TEST_F(GpuOps, RmsNorm) {
    const int64_t cols = 200;
    const std::vector<float> x = random_floats(static_cast<size_t>(5 * cols), rng_, 3.0f);
    const std::vector<float> weight = random_floats(static_cast<size_t>(cols), rng_);
    std::vector<float> expected(x.size());
    for (int64_t r = 0; r < 5; ++r) rms_norm_row(x.data() + r * cols, weight.data(), cols, 1e-5f, expected.data() + r * cols);
    EXPECT_LT(nmse(gpu_->rms_norm(x, weight, 1e-5f), expected), 1e-12);
}

TEST_F(GpuOps, RopeNormalAndNeoxAtFarPositions) {
    for (RopeStyle style : {RopeStyle::Normal, RopeStyle::Neox}) {
        ModelConfig c;
        c.head_dim = 64;
        c.rope_dim = 64;
        c.rope_freq_base = 1000000.0f;
        c.rope_style = style;
        const int n_heads = 3;
        const std::vector<int32_t> positions = {0, 1, 17, 4095};
        const std::vector<float> heads = random_floats(positions.size() * n_heads * 64, rng_);
        std::vector<float> expected = heads;
        const RopeParams p = rope_params(c, {});
        std::vector<float> cos(32), sin(32);
        for (size_t t = 0; t < positions.size(); ++t) {
            rope_angles(positions[t], p, cos.data(), sin.data());
            apply_rope(expected.data() + t * n_heads * 64, n_heads, 64, cos.data(), sin.data(), p);
        }
        // Same angle table as the CPU: only the rotation's float rounding may differ.
        EXPECT_LT(nmse(gpu_->rope(heads, positions, c, n_heads), expected), 1e-12) << (style == RopeStyle::Neox ? "neox" : "normal");
    }
}

TEST_F(GpuOps, SwigluAndAdd) {
    const std::vector<float> gate = random_floats(1000, rng_, 6.0f);
    const std::vector<float> up = random_floats(1000, rng_);
    std::vector<float> expected = gate;
    swiglu_inplace(expected.data(), up.data(), 1000);
    EXPECT_LT(nmse(gpu_->swiglu(gate, up), expected), 1e-12);

    const std::vector<float> bias = random_floats(10, rng_);
    std::vector<float> sum = up;
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += bias[i % 10];
    EXPECT_EQ(gpu_->add(up, bias), sum);
}

}  // namespace
}  // namespace inferscope
