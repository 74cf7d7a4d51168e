// The fused Vulkan kernels that replace a chain of single operations, against the CPU
// backend's chain on random inputs: record_qkv_prepare (biases, per-head Q/K norms, RoPE,
// cache store), and the q/k/v mat-vec doing that step itself against the two dispatches.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "engine/backend/cpu/ops.h"
#include "engine/backend/rope.h"
#include "engine/core/fp16.h"
#include "gpu/op_harness.h"
#include "gpu_cpu_reference.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

using testing::nmse;
using testing::random_floats;
using testing::random_weight;

struct PrepareCase {
    const char* name;
    int n_head, n_head_kv, head_dim, rope_dim;
    RopeStyle style;
    bool bias, q_norm, k_norm, kv_f16;
};

// bias, norm (weight may be empty) and RoPE of heads[n x n_heads x head_dim], as the CPU backend runs them.
std::vector<float> cpu_prepare(std::vector<float> heads, const float* bias, const std::vector<float>& norm,
                               const std::vector<int32_t>& positions, const RopeParams& rope, int n_heads, int head_dim,
                               float eps) {
    const size_t width = static_cast<size_t>(n_heads * head_dim);
    std::vector<float> cos(static_cast<size_t>(rope.rope_dim / 2)), sin(cos.size()), row(static_cast<size_t>(head_dim));
    for (size_t t = 0; t < positions.size(); ++t) {
        float* h = heads.data() + t * width;
        if (bias != nullptr) {
            for (size_t i = 0; i < width; ++i) h[i] += bias[i];
        }
        if (!norm.empty()) {
            for (int head = 0; head < n_heads; ++head) {
                std::copy(h + head * head_dim, h + (head + 1) * head_dim, row.begin());
                rms_norm_row(row.data(), norm.data(), head_dim, eps, h + head * head_dim);
            }
        }
        rope_angles(positions[t], rope, cos.data(), sin.data());
        apply_rope(h, n_heads, head_dim, cos.data(), sin.data(), rope);
    }
    return heads;
}

float cache_rounding(float x, bool kv_f16) { return kv_f16 ? round_to_fp16(x) : x; }

RopeParams case_rope(const PrepareCase& c, float freq_base) {
    ModelConfig config;
    config.head_dim = c.head_dim;
    config.rope_dim = c.rope_dim;
    config.rope_freq_base = freq_base;
    config.rope_style = c.style;
    return rope_params(config, {});
}

// The case's heads over a cache of 6 blocks of 16 tokens.
gpu::QkvPrepareShape case_shape(const PrepareCase& c) {
    gpu::QkvPrepareShape shape;
    shape.n_head = c.n_head;
    shape.n_head_kv = c.n_head_kv;
    shape.head_dim = c.head_dim;
    shape.block_tokens = 16;
    shape.n_blocks = 6;
    shape.kv_f16 = c.kv_f16;
    return shape;
}

// The cache slots of positions of one sequence whose blocks are not in order.
std::vector<int32_t> shuffled_slots(const std::vector<int32_t>& positions) {
    const std::vector<int32_t> block_of_position = {4, 2, 0, 5, 1, 3};  // position / 16 -> block
    std::vector<int32_t> slots;
    for (int32_t p : positions) slots.push_back(block_of_position[static_cast<size_t>(p / 16)] * 16 + p % 16);
    return slots;
}

class GpuFused : public ::testing::TestWithParam<PrepareCase> {
protected:
    void SetUp() override { INFERSCOPE_MAKE_OR_SKIP_GPU(gpu_, std::make_unique<gpu::OpHarness>(true)); }
    void TearDown() override {
        if (gpu_) {
            EXPECT_EQ(gpu_->validation_errors(), 0) << "Vulkan validation errors (printed above)";
        }
    }
    std::unique_ptr<gpu::OpHarness> gpu_;
    std::mt19937 rng_{7};
};

TEST_P(GpuFused, QkvPrepareEqualsBiasNormRopeAndStore) {
    const PrepareCase& c = GetParam();
    const RopeParams rope = case_rope(c, 1000000.0f);
    const gpu::QkvPrepareShape shape = case_shape(c);
    // Five tokens of a sequence at far positions.
    const std::vector<int32_t> positions = {0, 15, 16, 63, 70};
    const std::vector<int32_t> slots = shuffled_slots(positions);
    const auto n = positions.size();
    const size_t q_dim = static_cast<size_t>(c.n_head * c.head_dim), kv_dim = static_cast<size_t>(c.n_head_kv * c.head_dim);
    const std::vector<float> q = random_floats(n * q_dim, rng_, 2.0f), k = random_floats(n * kv_dim, rng_, 2.0f);
    const std::vector<float> v = random_floats(n * kv_dim, rng_, 2.0f);
    const std::vector<float> bias = c.bias ? random_floats(q_dim + 2 * kv_dim, rng_) : std::vector<float>{};
    const std::vector<float> q_norm = c.q_norm ? random_floats(static_cast<size_t>(c.head_dim), rng_) : std::vector<float>{};
    const std::vector<float> k_norm = c.k_norm ? random_floats(static_cast<size_t>(c.head_dim), rng_) : std::vector<float>{};

    const gpu::QkvPrepared got = gpu_->qkv_prepare(q, k, v, bias, q_norm, k_norm, positions, slots, rope, shape);
    const float* bq = c.bias ? bias.data() : nullptr;
    const std::vector<float> want_q = cpu_prepare(q, bq, q_norm, positions, rope, c.n_head, c.head_dim, shape.eps);
    EXPECT_LT(nmse(got.q, want_q), 1e-12);

    // k as the CPU rotates it, v with its bias only; both compared where the cache layout puts them.
    const std::vector<float> want_k =
        cpu_prepare(k, c.bias ? bias.data() + q_dim : nullptr, k_norm, positions, rope, c.n_head_kv, c.head_dim, shape.eps);
    std::vector<float> got_k, expected_k, got_v, expected_v;
    for (size_t t = 0; t < n; ++t) {
        const size_t block_base = static_cast<size_t>(slots[t] / 16) * 16 * kv_dim, offset = static_cast<size_t>(slots[t] % 16);
        for (size_t i = 0; i < kv_dim; ++i) {
            got_k.push_back(got.k_cache[block_base + i * 16 + offset]);
            expected_k.push_back(cache_rounding(want_k[t * kv_dim + i], c.kv_f16));
            got_v.push_back(got.v_cache[block_base + offset * kv_dim + i]);
            const float bv = c.bias ? bias[q_dim + kv_dim + i] : 0.0f;
            expected_v.push_back(cache_rounding(v[t * kv_dim + i] + bv, c.kv_f16));
        }
    }
    EXPECT_LT(nmse(got_k, expected_k), c.kv_f16 ? 1e-7 : 1e-12);
    EXPECT_EQ(got_v, expected_v);
    // Nothing else was written: the cache holds exactly n tokens' worth of nonzero rows.
    const auto nonzero = std::count_if(got.v_cache.begin(), got.v_cache.end(), [](float x) { return x != 0.0f; });
    EXPECT_EQ(static_cast<size_t>(nonzero), n * kv_dim);
}

TEST_P(GpuFused, QkvProductPreparedInItsDispatchEqualsTheTwoDispatches) {
    // The q/k/v mat-vec that also prepares each head against the mat-vec, then qkv_prepare:
    // the same arithmetic, so the same bits (F16, Q8_0, and Q4_K q and k beside a Q6_K v).
    // Recorded twice over one set of counters: the second call prepares again only if the
    // first left them zero.
    const PrepareCase& c = GetParam();
    const RopeParams rope = case_rope(c, 10000.0f);
    const gpu::QkvPrepareShape shape = case_shape(c);
    const std::vector<int32_t> all_positions = {0, 15, 16, 63, 70, 71, 90, 95};
    const size_t q_dim = static_cast<size_t>(c.n_head * c.head_dim), kv_dim = static_cast<size_t>(c.n_head_kv * c.head_dim);
    const std::vector<float> bias = c.bias ? random_floats(q_dim + 2 * kv_dim, rng_) : std::vector<float>{};
    const std::vector<float> q_norm = c.q_norm ? random_floats(static_cast<size_t>(c.head_dim), rng_) : std::vector<float>{};
    const std::vector<float> k_norm = c.k_norm ? random_floats(static_cast<size_t>(c.head_dim), rng_) : std::vector<float>{};
    struct Weights {
        GgmlType q, kv;
        int cols;
    };
    for (const Weights& types : {Weights{GgmlType::F16, GgmlType::F16, 100}, Weights{GgmlType::Q8_0, GgmlType::Q8_0, 96},
                                 Weights{GgmlType::Q4_K, GgmlType::Q6_K, 256}}) {
        const int cols = types.cols;
        std::vector<uint8_t> qb, kb, vb;
        const WeightMatrix wq = random_weight(types.q, static_cast<int64_t>(q_dim), cols, rng_, qb);
        const WeightMatrix wk = random_weight(types.q, static_cast<int64_t>(kv_dim), cols, rng_, kb);
        const WeightMatrix wv = random_weight(types.kv, static_cast<int64_t>(kv_dim), cols, rng_, vb);
        const std::vector<float> norm_weight = random_floats(static_cast<size_t>(cols), rng_);
        for (size_t n : {1u, 3u, 8u}) {
            const std::vector<int32_t> positions(all_positions.begin(), all_positions.begin() + static_cast<std::ptrdiff_t>(n));
            const std::vector<int32_t> slots = shuffled_slots(positions);
            const std::vector<float> x = random_floats(n * static_cast<size_t>(cols), rng_, 2.0f);
            const std::vector<const WeightMatrix*> ws = {&wq, &wk, &wv};
            const gpu::QkvPrepared apart =
                gpu_->qkv_product_prepared(ws, x, norm_weight, bias, q_norm, k_norm, positions, slots, rope, shape, false);
            const gpu::QkvPrepared fused =
                gpu_->qkv_product_prepared(ws, x, norm_weight, bias, q_norm, k_norm, positions, slots, rope, shape, true, 2);
            const std::string what = std::string(ggml_type_name(types.kv)) + " v, " + std::to_string(n) + " tokens";
            EXPECT_EQ(fused.q, apart.q) << what;
            EXPECT_EQ(fused.k_cache, apart.k_cache) << what;
            EXPECT_EQ(fused.v_cache, apart.v_cache) << what;
            const auto stored = std::count_if(fused.v_cache.begin(), fused.v_cache.end(), [](float v) { return v != 0.0f; });
            EXPECT_EQ(static_cast<size_t>(stored), n * kv_dim) << what;
        }
    }
}

TEST(GpuFusedCache, F16StoreRoundsAsTheCpu) {
    // The F16 cache store rounds on the bits as fp32_to_fp16 does: ties to even, F16 subnormals
    // kept, infinity from 65520 on (Vulkan leaves packHalf2x16's rounding to the device).
    std::unique_ptr<gpu::OpHarness> gpu;
    INFERSCOPE_MAKE_OR_SKIP_GPU(gpu, std::make_unique<gpu::OpHarness>(true));
    const float ulp_at_one = std::ldexp(1.0f, -10), smallest_subnormal = std::ldexp(1.0f, -24);
    const std::vector<float> edges = {1.0f + ulp_at_one / 2,           // tie: down to the even 1
                                      1.0f + 3 * ulp_at_one / 2,       // tie: up to the even 1 + 2 ulp
                                      -(2.0f + ulp_at_one),            // tie below -2
                                      smallest_subnormal / 2,          // tie: down to 0
                                      3 * smallest_subnormal / 2,      // tie: up to 2 subnormal steps
                                      std::ldexp(1.3f, -20),           // a subnormal F16
                                      std::ldexp(1.0f, -14) * 0.999f,  // just below the smallest normal F16
                                      65519.0f,
                                      65520.0f,
                                      -1e6f,
                                      std::ldexp(1.0f, -30),
                                      -0.0f,
                                      1e-3f,
                                      0.3333333f};
    gpu::QkvPrepareShape shape;
    shape.n_head = 1;
    shape.n_head_kv = 1;
    shape.head_dim = 32;
    shape.n_blocks = 1;
    shape.kv_f16 = true;
    std::vector<float> v(32);
    for (size_t i = 0; i < v.size(); ++i) v[i] = edges[i % edges.size()];
    ModelConfig config;
    config.head_dim = 32;
    config.rope_dim = 32;
    const gpu::QkvPrepared got = gpu->qkv_prepare(v, v, v, {}, {}, {}, {0}, {0}, rope_params(config, {}), shape);
    for (size_t i = 0; i < v.size(); ++i) {
        const float want = round_to_fp16(v[i]);
        EXPECT_EQ(std::bit_cast<uint32_t>(got.v_cache[i]), std::bit_cast<uint32_t>(want)) << "v = " << v[i];
    }
    EXPECT_EQ(gpu->validation_errors(), 0) << "Vulkan validation errors (printed above)";
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GpuFused,
    ::testing::Values(PrepareCase{"qwen2_bias_f16", 7, 1, 64, 64, RopeStyle::Neox, true, false, false, true},
                      PrepareCase{"qwen3_norms_f32", 4, 2, 32, 32, RopeStyle::Neox, false, true, true, false},
                      PrepareCase{"gemma3_head256_f16", 4, 1, 256, 256, RopeStyle::Neox, false, true, true, true},
                      PrepareCase{"llama_normal_partial_rotary", 3, 3, 64, 32, RopeStyle::Normal, false, false, false, false},
                      PrepareCase{"q_norm_only_bias", 2, 1, 80, 80, RopeStyle::Normal, true, true, false, false}),
    [](const ::testing::TestParamInfo<PrepareCase>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace inferscope
