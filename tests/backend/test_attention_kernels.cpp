// Every instruction-set family's attention loops against the scalar reference, for head
// sizes with and without a tail, F16 and F32 cache blocks scattered over a pool, partial
// blocks, and several query heads per KV head.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/core/fp16.h"

namespace inferscope {
namespace {

struct AttentionCase {
    int head_dim;
    int n_q;           // query heads per KV head
    int block_tokens;
    int n_ctx;         // tokens of the sequence (the last block may be partial)
    int row_heads;     // KV heads per V row (V's row stride in head sizes)
};

// The blocks of a sequence in a pool, in a scrambled order with unused blocks between them
// (as a paged cache hands them out), each filled with F16-representable values.
struct ScatteredBlocks {
    std::vector<float> pool32;
    std::vector<uint16_t> pool16;
    std::vector<size_t> offsets;  // of the sequence's blocks, in its order

    ScatteredBlocks(int n_blocks, size_t block_elements, std::mt19937& rng) {
        const int pool_blocks = 2 * n_blocks + 1;
        std::vector<int> slots(static_cast<size_t>(pool_blocks));
        for (int i = 0; i < pool_blocks; ++i) slots[static_cast<size_t>(i)] = i;
        std::shuffle(slots.begin(), slots.end(), rng);
        for (int b = 0; b < n_blocks; ++b) offsets.push_back(static_cast<size_t>(slots[static_cast<size_t>(b)]) * block_elements);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        pool32.resize(static_cast<size_t>(pool_blocks) * block_elements);
        for (float& x : pool32) x = round_to_fp16(normal(rng));
        pool16.resize(pool32.size());
        for (size_t i = 0; i < pool32.size(); ++i) pool16[i] = fp32_to_fp16(pool32[i]);
    }
    std::vector<const float*> blocks32() const {
        std::vector<const float*> p;
        for (size_t o : offsets) p.push_back(pool32.data() + o);
        return p;
    }
    std::vector<const uint16_t*> blocks16() const {
        std::vector<const uint16_t*> p;
        for (size_t o : offsets) p.push_back(pool16.data() + o);
        return p;
    }
};

class AttentionKernelsTest : public ::testing::TestWithParam<CpuIsa> {};

// Contexts of one token, of part of a block, of an odd and an even number of 16-token runs
// (the AVX-512 scores take runs in pairs), and long ones over many blocks; head sizes with a
// tail past every vector width (4, 8, 16).
TEST_P(AttentionKernelsTest, MatchScalarReference) {
    const CpuIsa isa = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << cpu_isa_name(isa) << " kernels";
    const AttentionKernels reference = attention_kernels(CpuIsa::Scalar);
    const AttentionKernels tested = attention_kernels(isa);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const AttentionCase s :
         {AttentionCase{64, 7, 16, 16, 2}, AttentionCase{8, 2, 16, 5, 4}, AttentionCase{32, 2, 16, 48, 2},
          AttentionCase{128, 4, 16, 3, 1}, AttentionCase{20, 9, 32, 21, 1}, AttentionCase{64, 1, 8, 8, 2},
          AttentionCase{64, 7, 16, 1, 2}, AttentionCase{64, 7, 16, 333, 2}, AttentionCase{64, 8, 16, 64, 1},
          AttentionCase{80, 3, 16, 43, 2}, AttentionCase{64, 5, 16, 9, 2}, AttentionCase{64, 6, 16, 32, 2},
          AttentionCase{16, 16, 16, 13, 1}, AttentionCase{48, 12, 16, 30, 2}, AttentionCase{64, 7, 32, 100, 2},
          AttentionCase{64, 2, 8, 37, 1}, AttentionCase{18, 3, 16, 27, 2}, AttentionCase{6, 2, 8, 11, 1}}) {
        const int n_blocks = (s.n_ctx + s.block_tokens - 1) / s.block_tokens;
        const int64_t v_stride = static_cast<int64_t>(s.row_heads) * s.head_dim;
        std::vector<float> q(static_cast<size_t>(s.n_q * s.head_dim));
        for (float& x : q) x = normal(rng);
        const ScatteredBlocks keys(n_blocks, static_cast<size_t>(s.head_dim * s.block_tokens), rng);  // [head_dim][block_tokens]
        const std::vector<const float*> k32 = keys.blocks32();
        const std::vector<const uint16_t*> k16 = keys.blocks16();

        const int64_t stride = s.n_ctx + 3;  // scores rows wider than the context
        std::vector<float> want(static_cast<size_t>(s.n_q * stride), -1.0f), got16(want), got32(want);
        reference.scores_f32(q.data(), s.n_q, s.head_dim, k32.data(), s.block_tokens, s.n_ctx, 0.125f, want.data(), stride);
        tested.scores_f16(q.data(), s.n_q, s.head_dim, k16.data(), s.block_tokens, s.n_ctx, 0.125f, got16.data(), stride);
        tested.scores_f32(q.data(), s.n_q, s.head_dim, k32.data(), s.block_tokens, s.n_ctx, 0.125f, got32.data(), stride);
        for (size_t i = 0; i < want.size(); ++i) {
            EXPECT_NEAR(got16[i], want[i], 1e-4f * (1.0f + std::abs(want[i]))) << "head dim " << s.head_dim << ", "
                                                                                << s.n_ctx << " tokens, at " << i;
            EXPECT_NEAR(got32[i], want[i], 1e-4f * (1.0f + std::abs(want[i])));
        }

        const ScatteredBlocks values(n_blocks, static_cast<size_t>(s.block_tokens * v_stride), rng);
        const std::vector<const float*> v32 = values.blocks32();
        const std::vector<const uint16_t*> v16 = values.blocks16();
        std::vector<float> p(static_cast<size_t>(s.n_q * s.n_ctx));
        for (float& x : p) x = std::abs(normal(rng));
        std::vector<float> out_want(q.size(), 0.5f), out16(q.size(), 0.5f), out32(q.size(), 0.5f);
        reference.accumulate_f32(p.data(), s.n_q, s.n_ctx, v32.data(), s.block_tokens, v_stride, s.n_ctx, s.head_dim,
                                 out_want.data());
        tested.accumulate_f16(p.data(), s.n_q, s.n_ctx, v16.data(), s.block_tokens, v_stride, s.n_ctx, s.head_dim, out16.data());
        tested.accumulate_f32(p.data(), s.n_q, s.n_ctx, v32.data(), s.block_tokens, v_stride, s.n_ctx, s.head_dim, out32.data());
        for (size_t i = 0; i < out_want.size(); ++i) {
            EXPECT_NEAR(out16[i], out_want[i], 1e-4f * (1.0f + std::abs(out_want[i]))) << "head dim " << s.head_dim << ", "
                                                                                      << s.n_ctx << " tokens, at " << i;
            EXPECT_NEAR(out32[i], out_want[i], 1e-4f * (1.0f + std::abs(out_want[i])));
        }
    }
}

TEST_P(AttentionKernelsTest, SoftmaxMatchesReference) {
    const CpuIsa isa = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << cpu_isa_name(isa) << " kernels";
    const AttentionKernels reference = attention_kernels(CpuIsa::Scalar);
    const AttentionKernels tested = attention_kernels(isa);
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 4.0f);
    for (int n : {1, 5, 16, 17, 100, 2048}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = normal(rng);
        x[static_cast<size_t>(n) / 2] = -200.0f;  // far below the maximum: underflows to zero
        std::vector<float> want = x, got = x;
        reference.softmax(want.data(), n);
        tested.softmax(got.data(), n);
        double total = 0;
        for (int i = 0; i < n; ++i) {
            EXPECT_NEAR(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], 1e-6f + 2e-6f * want[static_cast<size_t>(i)]);
            total += got[static_cast<size_t>(i)];
        }
        EXPECT_NEAR(total, 1.0, 1e-5);
    }
}

// Every SIMD family runs vector loops of its own or its base family's (AVX2, NEON), never the
// scalar reference's.
TEST(AttentionKernels, SimdFamiliesDoNotFallBackToScalar) {
    const AttentionKernels scalar = attention_kernels(CpuIsa::Scalar);
    for (const CpuIsa isa : built_cpu_families()) {
        if (isa == CpuIsa::Scalar || !cpu_supports(isa)) continue;
        const AttentionKernels tested = attention_kernels(isa);
        EXPECT_NE(tested.scores_f16, scalar.scores_f16) << cpu_isa_name(isa);
        EXPECT_NE(tested.scores_f32, scalar.scores_f32) << cpu_isa_name(isa);
        EXPECT_NE(tested.softmax, scalar.softmax) << cpu_isa_name(isa);
        EXPECT_NE(tested.accumulate_f16, scalar.accumulate_f16) << cpu_isa_name(isa);
        EXPECT_NE(tested.accumulate_f32, scalar.accumulate_f32) << cpu_isa_name(isa);
    }
}

// The block whose lines a kernel requests while reading block b: kKvBlocksAheadByLine on
// in the sequence's order (not the pool's), and block b itself where that is past the end.
TEST(KvBlockWalk, RequestsByLineTheBlockAheadInSequenceOrder) {
    static_assert(simd::kKvBlocksAheadByLine == 3);
    const uint16_t pool[7 * 4] = {};
    const int order[] = {5, 0, 3, 6, 1};  // the sequence's blocks, scattered over the pool
    std::vector<const uint16_t*> blocks;
    for (int slot : order) blocks.push_back(pool + 4 * slot);
    const auto walk = simd::KvBlockWalk<uint16_t>::keys(blocks.data(), /*block_tokens=*/2, /*n_ctx=*/9, /*head_dim=*/2);
    ASSERT_EQ(walk.n_blocks, 5);
    EXPECT_EQ(walk.ahead_of(0), blocks[3]);
    EXPECT_EQ(walk.ahead_of(1), blocks[4]);
    EXPECT_EQ(walk.ahead_of(2), blocks[2]);
    EXPECT_EQ(walk.ahead_of(3), blocks[3]);
    EXPECT_EQ(walk.ahead_of(4), blocks[4]);
    EXPECT_EQ(walk.tokens_in(4), 1);
}

INSTANTIATE_TEST_SUITE_P(Families, AttentionKernelsTest, ::testing::ValuesIn(built_cpu_families()),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(cpu_isa_name(info.param)); });

}  // namespace
}  // namespace inferscope
