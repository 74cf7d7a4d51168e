// Each Vulkan kernel against the CPU backend's operation on fresh random inputs, with an
// error bound per weight type on the normalised mean squared error (as ggml's
// test-backend-ops does). The validation layer is on; any error it reports fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <utility>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kv_storage.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/ops.h"
#include "engine/core/fp16.h"
#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "gpu/op_harness.h"
#include "gpu/vk_kernels.h"
#include "gpu_cpu_reference.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

using testing::nmse;
using testing::random_weight;
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

std::vector<float> cpu_matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n) {
    ThreadPool pool(1);
    MatmulScratch scratch;
    std::vector<float> y(static_cast<size_t>(n * w.rows));
    matmul(w, x.data(), n, y.data(), pool, scratch);
    return y;
}

struct MatmulCase {
    GgmlType type;
    double max_nmse;  // F16/BF16: both round the input alike; quantized: the GPU may keep F32 inputs
};

class GpuMatmul : public GpuOps, public ::testing::WithParamInterface<MatmulCase> {};

TEST_P(GpuMatmul, MatchesCpuForDecodeAndPrefillShapes) {
    const MatmulCase c = GetParam();
    std::vector<uint8_t> bytes;
    // 67 rows: not a multiple of the rows per workgroup; 9 to 15 tokens: matmul.comp (or the
    // tiles where the input is encoded) with every count of tokens past its 8; from 16 the
    // tiled kernel, 70 with partial tiles in both directions (test_gpu_matvec: 1 to 8).
    const WeightMatrix w = random_weight(c.type, 67, 512, rng_, bytes);
    for (int64_t n : {1, 9, 10, 11, 12, 13, 14, 15, 16, 70}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * w.cols), rng_);
        const double e = nmse(gpu_->matmul(w, x, n), cpu_matmul(w, x, n));
        EXPECT_LT(e, c.max_nmse) << ggml_type_name(c.type) << " n=" << n;
        std::printf("[ measured ] matmul %s n=%lld: NMSE %.3g\n", std::string(ggml_type_name(c.type)).c_str(),
                    static_cast<long long>(n), e);
    }
}

INSTANTIATE_TEST_SUITE_P(
    Types, GpuMatmul,
    ::testing::Values(MatmulCase{GgmlType::F32, 1e-10}, MatmulCase{GgmlType::F16, 1e-11}, MatmulCase{GgmlType::BF16, 1e-11},
                      MatmulCase{GgmlType::Q8_0, 5e-4}, MatmulCase{GgmlType::Q4_0, 5e-4}, MatmulCase{GgmlType::Q4_1, 5e-4},
                      MatmulCase{GgmlType::Q5_0, 5e-4}, MatmulCase{GgmlType::Q5_1, 5e-4}, MatmulCase{GgmlType::IQ4_NL, 5e-4},
                      MatmulCase{GgmlType::Q4_K, 5e-4}, MatmulCase{GgmlType::Q5_K, 5e-4}, MatmulCase{GgmlType::Q6_K, 5e-4},
                      MatmulCase{GgmlType::IQ4_XS, 5e-4}, MatmulCase{GgmlType::Q2_K, 5e-4}, MatmulCase{GgmlType::Q3_K, 5e-4}),
    [](const auto& info) { return std::string(ggml_type_name(info.param.type)); });

// Inputs that show a rounding rule to F16 or BF16: exact ties between neighbouring values of
// either parity, F16 subnormals and their ties, values at or below half the smallest F16
// subnormal, both signs, and ordinary values.
std::vector<float> rounding_probes(GgmlType type, size_t count, std::mt19937& rng) {
    std::uniform_int_distribution<uint32_t> bits16(0, 0xFFFF);
    std::uniform_int_distribution<int> kind(0, 3);
    std::vector<float> probes(count);
    for (float& x : probes) {
        const uint32_t sign = bits16(rng) & 0x8000u;
        const uint32_t magnitude = bits16(rng) & 0x7FFFu;
        switch (kind(rng)) {
            case 0:  // halfway between two neighbours
                if (type == GgmlType::BF16) {
                    x = std::bit_cast<float>(((sign | (0x80u + magnitude % 0x7E00u)) << 16) | 0x8000u);  // F32 normals
                } else {
                    const auto h = static_cast<uint16_t>(sign | (0x400u + magnitude % 0x7400u));  // F16 normals below 2^15
                    x = fp16_to_fp32(h) + (fp16_to_fp32(static_cast<uint16_t>(h + 1)) - fp16_to_fp32(h)) / 2;
                }
                break;
            case 1:  // k halves of the smallest F16 subnormal (2^-25): subnormals, their ties, 0.5 and below
                x = std::ldexp(static_cast<float>(magnitude % 2048), -25) * (sign != 0 ? -1.0f : 1.0f);
                break;
            case 2:  // below half the smallest F16 subnormal
                x = std::ldexp(static_cast<float>(magnitude % 1024 + 1), -36) * (sign != 0 ? -1.0f : 1.0f);
                break;
            default:
                x = std::ldexp(static_cast<float>(bits16(rng)) - 32768.0f, -12);
        }
    }
    return probes;
}

// A `type` matrix whose row r holds one 1, at column picks[r]: its product selects inputs.
WeightMatrix selection_matrix(GgmlType type, int64_t cols, const std::vector<int64_t>& picks, std::vector<uint8_t>& bytes) {
    const auto row = [&](int64_t r) {
        std::vector<float> values(static_cast<size_t>(cols), 0.0f);
        values[static_cast<size_t>(picks[static_cast<size_t>(r)])] = 1.0f;
        return values;
    };
    return testing::weight_of_rows(type, static_cast<int64_t>(picks.size()), cols, row, bytes);
}

// F16 and BF16 weights multiply their input rounded as the CPU (and llama.cpp) rounds it for
// them, in every product kernel: a matrix selecting inputs gives each back rounded, bit for bit.
// 96 columns: the identity, whose mat-vec (up to 8 tokens) rounds the rows once per workgroup;
// 4,864: one input in 32 selected, rows too long for that, so each is rounded as it is read;
// then matmul.comp's 9 to 15 tokens and the tiles from 16.
TEST_F(GpuOps, HalfWeightsMultiplyTheirInputRoundedAsTheCpuRoundsIt) {
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        for (const auto& [cols, step] : {std::pair<int64_t, int64_t>{96, 1}, std::pair<int64_t, int64_t>{4864, 32}}) {
            std::vector<int64_t> picks;  // one column of each `step`, at varying places in it
            for (int64_t r = 0; r < cols / step; ++r) picks.push_back(r * step + r % step);
            std::vector<uint8_t> bytes;
            const WeightMatrix w = selection_matrix(type, cols, picks, bytes);
            for (int64_t n : {1, 5, 12, 40}) {
                const std::vector<float> x = rounding_probes(type, static_cast<size_t>(n * cols), rng_);
                std::vector<float> expected;
                size_t rounded = 0;
                for (int64_t t = 0; t < n; ++t) {
                    for (int64_t pick : picks) {
                        const float value = x[static_cast<size_t>(t * cols + pick)];
                        expected.push_back(type == GgmlType::F16 ? round_to_fp16(value) : round_to_bf16(value));
                        rounded += expected.back() != value;
                    }
                }
                EXPECT_GT(rounded * 2, expected.size()) << "the probes should mostly need rounding";
                const std::string what =
                    std::string(ggml_type_name(type)) + " " + std::to_string(cols) + " columns, n=" + std::to_string(n);
                EXPECT_EQ(gpu_->matmul(w, x, n), expected) << what;
                EXPECT_EQ(cpu_matmul(w, x, n), expected) << what << " on the CPU";
            }
        }
    }
}

TEST(GpuWeightTypes, ATypeNoShaderReadsIsRefusedByName) {
    // Q8_K is an activation format no weight file uses: nothing reads it, nothing converts it.
    try {
        gpu::shader_weight_type(GgmlType::Q8_K);
        FAIL() << "Q8_K weights were accepted";
    } catch (const UnsupportedError& e) {
        EXPECT_NE(std::string(e.what()).find("Q8_K"), std::string::npos) << e.what();
    }
    EXPECT_EQ(gpu::shader_weight_type(GgmlType::Q3_K), gpu::ShaderWeightType::Q3_K);
}

// Products of one input recorded together (q/k/v, gate/up) encode it once per encoding they
// need: Q8_0 and Q5_0 share one, Q4_K (Q8_K) and Q4_1 (Q8_1) each re-encode it once the products
// before have read it. Each output equals its product recorded alone, bit for bit, on the
// mat-vec, matmul.comp's token counts and the tiles, and synchronisation validation finds the
// reuse of the encoding ordered.
TEST_F(GpuOps, ProductsOfOneInputEqualTheirOwnProductsWhateverTheirEncodings) {
    std::vector<uint8_t> bytes[4];
    const WeightMatrix ws[4] = {
        random_weight(GgmlType::Q8_0, 67, 512, rng_, bytes[0]), random_weight(GgmlType::Q5_0, 20, 512, rng_, bytes[1]),
        random_weight(GgmlType::Q4_K, 40, 512, rng_, bytes[2]), random_weight(GgmlType::Q4_1, 30, 512, rng_, bytes[3])};
    for (int64_t n : {1, 9, 40}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * 512), rng_);
        const std::vector<std::vector<float>> together = gpu_->products({&ws[0], &ws[1], &ws[2], &ws[3]}, x, n);
        ASSERT_EQ(together.size(), 4u);
        for (size_t i = 0; i < 4; ++i) {
            EXPECT_EQ(together[i], gpu_->matmul(ws[i], x, n)) << ggml_type_name(ws[i].type) << " n=" << n;
        }
    }
}

TEST_F(GpuOps, AnInputEncodedAsQ8_1ServesTheQ8_0ProductsBesideItsOwn) {
    // A Q5_K_M file's Q5_1 q and k beside its Q8_0 v where 256 does not divide the rows: one
    // encoding of the input (Q8_1: Q8_0's codes and scale, and the code sums) serves every
    // product, whichever comes first, each equal bit for bit to its product recorded alone.
    if (!gpu_->integer_dot()) GTEST_SKIP() << "the device lacks integer dot products or subgroup arithmetic: no input is encoded";
    std::vector<uint8_t> bytes[3];
    const WeightMatrix q8_0 = random_weight(GgmlType::Q8_0, 21, 192, rng_, bytes[0]);
    const WeightMatrix q5_1 = random_weight(GgmlType::Q5_1, 70, 192, rng_, bytes[1]);
    const WeightMatrix q4_0 = random_weight(GgmlType::Q4_0, 13, 192, rng_, bytes[2]);
    const std::vector<std::vector<const WeightMatrix*>> orders = {{&q5_1, &q8_0}, {&q8_0, &q5_1}, {&q8_0, &q4_0, &q5_1}};
    for (int64_t n : {9, 40}) {
        const std::vector<float> x = random_floats(static_cast<size_t>(n * 192), rng_);
        for (const auto& ws : orders) {
            const std::vector<std::vector<float>> together = gpu_->products(ws, x, n);
            EXPECT_EQ(gpu_->last_dispatches(), 1 + ws.size()) << "one encoding, then a dispatch per product; n=" << n;
            ASSERT_EQ(together.size(), ws.size());
            for (size_t i = 0; i < ws.size(); ++i) {
                EXPECT_EQ(together[i], gpu_->matmul(*ws[i], x, n)) << ggml_type_name(ws[i]->type) << " n=" << n;
            }
        }
    }
}

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
    // Every type a shader reads in place: the GPU's weights are the CPU's, bit for bit.
    for (GgmlType type : {GgmlType::F32, GgmlType::F16, GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_1,
                          GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::IQ4_NL, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                          GgmlType::IQ4_XS, GgmlType::Q2_K, GgmlType::Q3_K}) {
        std::vector<uint8_t> bytes;
        const int64_t cols = 512;  // two blocks of 256
        const WeightMatrix w = random_weight(type, 40, cols, rng_, bytes);
        const std::vector<int32_t> tokens = {0, 39, 7, 7, 21, 13};
        std::vector<float> expected(tokens.size() * cols);
        for (size_t i = 0; i < tokens.size(); ++i) dequantize_row(type, w.row(tokens[i]), expected.data() + i * cols, cols);
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

// heads[positions x n_heads x 64] rotated by the CPU with `p`'s angles.
std::vector<float> cpu_rope(std::vector<float> heads, const std::vector<int32_t>& positions, const RopeParams& p, int n_heads) {
    std::vector<float> cos(32), sin(32);
    for (size_t t = 0; t < positions.size(); ++t) {
        rope_angles(positions[t], p, cos.data(), sin.data());
        apply_rope(heads.data() + t * n_heads * 64, n_heads, 64, cos.data(), sin.data(), p);
    }
    return heads;
}

// q's heads[positions x n_heads x head_dim] after record_qkv_prepare with no biases and no
// K norm: RoPE by `rope` (none when its rope_dim is 0), after the Q norm when q_norm is given.
std::vector<float> gpu_prepared_q(gpu::OpHarness& gpu, const std::vector<float>& heads, const std::vector<float>& q_norm,
                                  const std::vector<int32_t>& positions, const RopeParams& rope, int n_heads, int head_dim) {
    gpu::QkvPrepareShape shape;
    shape.n_head = n_heads;
    shape.n_head_kv = 1;
    shape.head_dim = head_dim;
    shape.block_tokens = 16;
    shape.n_blocks = static_cast<int>((positions.size() + 15) / 16);
    std::vector<int32_t> slots(positions.size());
    std::iota(slots.begin(), slots.end(), 0);
    const std::vector<float> kv(positions.size() * static_cast<size_t>(head_dim), 0.0f);
    return gpu.qkv_prepare(heads, kv, kv, {}, q_norm, {}, positions, slots, rope, shape).q;
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
        const RopeParams p = rope_params(c, {});
        // Same angle table as the CPU: only the rotation's float rounding may differ.
        EXPECT_LT(nmse(gpu_prepared_q(*gpu_, heads, {}, positions, p, n_heads, 64), cpu_rope(heads, positions, p, n_heads)),
                  1e-12)
            << (style == RopeStyle::Neox ? "neox" : "normal");
    }
}

TEST_F(GpuOps, RopeOfSlidingWindowLayersUsesTheLocalBaseUnscaled) {
    ModelConfig c;
    c.head_dim = 64;
    c.rope_dim = 64;
    c.rope_freq_base = 1000000.0f;
    c.rope_freq_scale = 0.125f;  // global layers only
    c.rope_freq_base_local = 10000.0f;
    c.rope_style = RopeStyle::Neox;
    const int n_heads = 2;
    const std::vector<int32_t> positions = {0, 3, 40, 1000};
    const std::vector<float> heads = random_floats(positions.size() * n_heads * 64, rng_);
    const RopeParams local = local_rope_params(c, {});
    const std::vector<float> expected = cpu_rope(heads, positions, local, n_heads);
    EXPECT_LT(nmse(gpu_prepared_q(*gpu_, heads, {}, positions, local, n_heads, 64), expected), 1e-12);
    // The local angles are not the global ones: the test would catch a swapped table.
    EXPECT_GT(nmse(cpu_rope(heads, positions, rope_params(c, {}), n_heads), expected), 1e-3);
}

TEST_F(GpuOps, HeadNormEqualsCpuRowNorm) {
    // 11 tokens x 4 heads of head_dim 32 (qwen3-tiny's q) and of 256 (Gemma 3's head_dim).
    for (int64_t head_dim : {32, 256}) {
        const std::vector<float> heads = random_floats(static_cast<size_t>(44 * head_dim), rng_, 3.0f);
        const std::vector<float> weight = random_floats(static_cast<size_t>(head_dim), rng_);
        std::vector<float> expected(heads.size());
        for (int64_t r = 0; r < 44; ++r) {
            rms_norm_row(heads.data() + r * head_dim, weight.data(), head_dim, 1e-6f, expected.data() + r * head_dim);
        }
        std::vector<int32_t> positions(11);
        std::iota(positions.begin(), positions.end(), 0);
        const double e = nmse(gpu_prepared_q(*gpu_, heads, weight, positions, RopeParams{}, 4, static_cast<int>(head_dim)), expected);
        EXPECT_LT(e, 1e-12) << "head_dim " << head_dim;
        std::printf("[ measured ] head norm, head_dim %lld: NMSE %.3g\n", static_cast<long long>(head_dim), e);
    }
}

TEST_F(GpuOps, EmbeddingScaleMultipliesTheDequantizedRows) {
    std::vector<uint8_t> bytes;
    const WeightMatrix w = random_weight(GgmlType::Q8_0, 40, 64, rng_, bytes);
    const std::vector<int32_t> tokens = {3, 0, 39, 3};
    const float scale = std::sqrt(64.0f);
    std::vector<float> expected(tokens.size() * 64);
    for (size_t i = 0; i < tokens.size(); ++i) {
        dequantize_row(GgmlType::Q8_0, w.row(tokens[i]), expected.data() + i * 64, 64);
        for (size_t d = 0; d < 64; ++d) expected[i * 64 + d] *= scale;
    }
    EXPECT_EQ(gpu_->embed(w, tokens, 0, scale), expected);
}

// The F16 bits of a value that F16 represents exactly.
int f16_bits(float x) { return static_cast<int>(fp32_to_fp16(x)); }

TEST_F(GpuOps, GegluEqualsTheCpuF16TableSemantics) {
    // Gates over the table's whole range and beyond its +-10 cut-offs, ties of F32 -> F16
    // rounding, F16 subnormals; up = 1 so the outputs are the GELU values themselves.
    std::vector<float> gate = random_floats(20000, rng_, 12.0f);
    const std::vector<float> small = random_floats(2000, rng_, 1e-4f);
    gate.insert(gate.end(), small.begin(), small.end());
    for (float special : {0.0f, -0.0f, 10.0f, -10.0f, 9.999f, -9.999f, 1.0f + 1.0f / 2048, -3.0f - 3.0f / 2048, 6e-8f}) {
        gate.push_back(special);
    }
    const std::vector<float> ones(gate.size(), 1.0f);
    std::vector<float> expected = gate;
    geglu_inplace(expected.data(), ones.data(), static_cast<int64_t>(gate.size()));
    const std::vector<float> ours = gpu_->gated_activation(gate, ones, FfnActivation::GeluTanh);
    int differing = 0, worst_steps = 0;
    float worst = 0;
    for (size_t i = 0; i < gate.size(); ++i) {
        if (ours[i] == expected[i]) continue;
        ++differing;
        worst = std::max(worst, std::abs(ours[i] - expected[i]));
        // Below 10 both are F16 values: at most one F16 step apart (tanh's last bit).
        if (std::abs(gate[i]) < 10.0f) worst_steps = std::max(worst_steps, std::abs(f16_bits(ours[i]) - f16_bits(expected[i])));
    }
    EXPECT_LE(worst_steps, 1);
    EXPECT_LE(differing, static_cast<int>(gate.size() / 1000)) << "values not bit-equal to the CPU's";
    std::printf("[ measured ] GeGLU: %d of %zu values differ from the CPU, by at most %d F16 step (%.3g)\n", differing,
                gate.size(), worst_steps, worst);

    const std::vector<float> up = random_floats(gate.size(), rng_);
    std::vector<float> gated = gate;
    geglu_inplace(gated.data(), up.data(), static_cast<int64_t>(gate.size()));
    EXPECT_LT(nmse(gpu_->gated_activation(gate, up, FfnActivation::GeluTanh), gated), 1e-7);
}

TEST_F(GpuOps, Swiglu) {
    const std::vector<float> gate = random_floats(1000, rng_, 6.0f);
    const std::vector<float> up = random_floats(1000, rng_);
    std::vector<float> expected = gate;
    swiglu_inplace(expected.data(), up.data(), 1000);
    EXPECT_LT(nmse(gpu_->gated_activation(gate, up, FfnActivation::Silu), expected), 1e-12);
}

// The CPU backend's attention of one sequence at positions 0..n-1, every position querying.
std::vector<float> cpu_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                 const gpu::AttentionShape& shape) {
    const auto n = static_cast<int>(k.size() / static_cast<size_t>(shape.n_head_kv * shape.head_dim));
    return testing::cpu_attention(q, gpu::AttentionSequence{k, v, shape.block_table, n}, shape);
}

TEST_F(GpuOps, AttentionWithAndWithoutASlidingWindowMatchesCpu) {
    // 150 tokens: three chunks of 64 positions; blocks of 16 in a scattered order. Windows:
    // none, Gemma-like small ones (one starting mid-block), one longer than a chunk, and one
    // longer than the sequence.
    gpu::AttentionShape shape;
    shape.n_head = 4;
    shape.n_head_kv = 2;
    shape.head_dim = 32;
    shape.block_tokens = 16;
    shape.scale = 0.0625f;  // not 1/sqrt(head_dim): an explicit query scale
    for (int b = 0; b < 10; ++b) shape.block_table.push_back((b * 7 + 3) % 10);
    const int n = 150;
    const std::vector<float> q = random_floats(static_cast<size_t>(n * shape.n_head * shape.head_dim), rng_, 2.0f);
    const std::vector<float> k = random_floats(static_cast<size_t>(n * shape.n_head_kv * shape.head_dim), rng_, 2.0f);
    const std::vector<float> v = random_floats(k.size(), rng_);
    for (bool kv_f16 : {false, true}) {
        for (int window : {0, 5, 21, 100, 512}) {
            shape.kv_f16 = kv_f16;
            shape.window = window;
            const double e = nmse(gpu_->attention(q, k, v, shape), cpu_attention(q, k, v, shape));
            EXPECT_LT(e, 1e-10) << "window " << window << (kv_f16 ? " F16" : " F32") << " cache";
            std::printf("[ measured ] attention, window %d, %s cache: NMSE %.3g\n", window, kv_f16 ? "F16" : "F32", e);
        }
    }
}

}  // namespace
}  // namespace inferscope
