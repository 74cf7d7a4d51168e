// Every instruction-set family's attention loops against the scalar reference, for head
// sizes with and without a tail, F16 and F32 cache rows, and several heads per KV head.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/core/fp16.h"

namespace inferscope {
namespace {

struct Shape {
    int head_dim;
    int n_q;
    int n_t;
    int row_stride_heads;  // KV heads per row (the row stride in head sizes)
};

class AttentionKernelsTest : public ::testing::TestWithParam<CpuIsa> {};

TEST_P(AttentionKernelsTest, MatchScalarReference) {
    const CpuIsa isa = GetParam();
    if (!cpu_supports(isa)) GTEST_SKIP() << "this CPU cannot run " << cpu_isa_name(isa) << " kernels";
    const AttentionKernels reference = attention_kernels(CpuIsa::Scalar);
    const AttentionKernels tested = attention_kernels(isa);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (const Shape s : {Shape{64, 7, 16, 2}, Shape{8, 2, 5, 4}, Shape{32, 2, 16, 2}, Shape{128, 4, 3, 1}, Shape{20, 3, 16, 1}}) {
        const int64_t stride = static_cast<int64_t>(s.row_stride_heads) * s.head_dim;
        std::vector<float> q(static_cast<size_t>(s.n_q * s.head_dim)), k32(static_cast<size_t>(s.n_t * stride));
        for (float& x : q) x = normal(rng);
        for (float& x : k32) x = round_to_fp16(normal(rng));
        std::vector<uint16_t> k16(k32.size());
        for (size_t i = 0; i < k32.size(); ++i) k16[i] = fp32_to_fp16(k32[i]);
        std::vector<float> p(static_cast<size_t>(s.n_q * s.n_t));
        for (float& x : p) x = std::abs(normal(rng));

        std::vector<float> want(p.size()), got16(p.size()), got32(p.size());
        reference.scores_f32(q.data(), s.n_q, s.head_dim, k32.data(), stride, s.n_t, 0.125f, want.data(), s.n_t);
        tested.scores_f16(q.data(), s.n_q, s.head_dim, k16.data(), stride, s.n_t, 0.125f, got16.data(), s.n_t);
        tested.scores_f32(q.data(), s.n_q, s.head_dim, k32.data(), stride, s.n_t, 0.125f, got32.data(), s.n_t);
        for (size_t i = 0; i < want.size(); ++i) {
            EXPECT_NEAR(got16[i], want[i], 1e-4f * (1.0f + std::abs(want[i]))) << "head dim " << s.head_dim;
            EXPECT_NEAR(got32[i], want[i], 1e-4f * (1.0f + std::abs(want[i])));
        }

        std::vector<float> out_want(q.size(), 0.5f), out16(q.size(), 0.5f), out32(q.size(), 0.5f);
        reference.accumulate_f32(p.data(), s.n_q, s.n_t, k32.data(), stride, s.n_t, s.head_dim, out_want.data());
        tested.accumulate_f16(p.data(), s.n_q, s.n_t, k16.data(), stride, s.n_t, s.head_dim, out16.data());
        tested.accumulate_f32(p.data(), s.n_q, s.n_t, k32.data(), stride, s.n_t, s.head_dim, out32.data());
        for (size_t i = 0; i < out_want.size(); ++i) {
            EXPECT_NEAR(out16[i], out_want[i], 1e-4f * (1.0f + std::abs(out_want[i])));
            EXPECT_NEAR(out32[i], out_want[i], 1e-4f * (1.0f + std::abs(out_want[i])));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Families, AttentionKernelsTest, ::testing::Values(CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512),
                         [](const ::testing::TestParamInfo<CpuIsa>& info) { return std::string(cpu_isa_name(info.param)); });

}  // namespace
}  // namespace inferscope
