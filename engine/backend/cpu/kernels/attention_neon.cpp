// NEON attention inner loops, the AVX2 ones (attention_avx2.cpp) over four-lane vectors; F16
// blocks are widened with vcvt_f32_f16 (exact). Advanced SIMD needs no extra flags; everything
// stays in an anonymous namespace.
#include <arm_neon.h>

#include <cmath>

#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kernels/exp_neon.h"
#include "engine/backend/cpu/kernels/lanes4_neon.h"

namespace inferscope::simd {
namespace {

// The passes of the walks in attention_kernels.h (scores_by_passes, accumulate_by_passes).
struct NeonPasses {
    // Query heads per pass of the scores and four-dimension chunks per pass of the accumulation:
    // their accumulators fill half of the 32 vector registers.
    static constexpr int kScoreHeads = 8;
    static constexpr int kValueChunks = 16;
    static constexpr int kLanes = 4;

    // Up to 8 tokens (two vectors) at a time from the transposed K block (see
    // attention_kernels.h). Heads is a compile-time count and every loop over the accumulators
    // is unrolled, so that they stay in registers.
    template <typename T, int Heads>
    static void scores(const float* q, int head_dim, const T* kt, int block_tokens, int n_t, float scale, float* out,
                       int64_t out_stride) {
        for (int t0 = 0; t0 < n_t; t0 += 8) {
            const int valid = n_t - t0;
            float32x4_t acc[Heads][2];
#pragma GCC unroll 8
            for (int g = 0; g < Heads; ++g) acc[g][0] = acc[g][1] = vdupq_n_f32(0.0f);
            for (int d = 0; d < head_dim; ++d) {
                const T* row = kt + static_cast<int64_t>(d) * block_tokens + t0;
                const float32x4_t k0 = load_lanes4(row, valid);
                const float32x4_t k1 = valid > 4 ? load_lanes4(row + 4, valid - 4) : vdupq_n_f32(0.0f);
#pragma GCC unroll 8
                for (int g = 0; g < Heads; ++g) {
                    const float qd = q[static_cast<int64_t>(g) * head_dim + d];
                    acc[g][0] = vfmaq_n_f32(acc[g][0], k0, qd);
                    acc[g][1] = vfmaq_n_f32(acc[g][1], k1, qd);
                }
            }
#pragma GCC unroll 8
            for (int g = 0; g < Heads; ++g) {
                float* og = out + g * out_stride + t0;
                store_lanes4(og, valid, vmulq_n_f32(acc[g][0], scale));
                if (valid > 4) store_lanes4(og + 4, valid - 4, vmulq_n_f32(acc[g][1], scale));
            }
        }
    }

    // One query head at a time, its Chunks x 4 outputs in registers over the block (Chunks a
    // compile-time count, every loop over the accumulators unrolled, as in scores).
    template <typename T, int Chunks>
    static void accumulate(const float* p, int n_q, int64_t p_stride, const T* v, int64_t row_stride, int n_t, int head_dim,
                           int first_chunk, float* out) {
        for (int g = 0; g < n_q; ++g) {
            float* og = out + static_cast<int64_t>(g) * head_dim + first_chunk * 4;
            const float* pg = p + g * p_stride;
            float32x4_t acc[Chunks];
#pragma GCC unroll 16
            for (int c = 0; c < Chunks; ++c) acc[c] = load_lanes4(og + c * 4, head_dim - (first_chunk + c) * 4);
            for (int t = 0; t < n_t; ++t) {
                const float weight = pg[t];
                const T* row = v + t * row_stride + first_chunk * 4;
#pragma GCC unroll 16
                for (int c = 0; c < Chunks; ++c) {
                    acc[c] = vfmaq_n_f32(acc[c], load_lanes4(row + c * 4, head_dim - (first_chunk + c) * 4), weight);
                }
            }
#pragma GCC unroll 16
            for (int c = 0; c < Chunks; ++c) store_lanes4(og + c * 4, head_dim - (first_chunk + c) * 4, acc[c]);
        }
    }
};

// As the AVX2 softmax, four lanes wide: the lanes past n load as -infinity, whose
// exponential is 0, so they change neither the maximum nor the sum.
void softmax(float* x, int64_t n) {
    float32x4_t max_v = vdupq_n_f32(-INFINITY);
    over_lanes4(n, [&](int64_t i, int64_t valid) { max_v = vmaxq_f32(max_v, load_lanes4(x + i, valid, -INFINITY)); });
    const float32x4_t max_b = vdupq_n_f32(vmaxvq_f32(max_v));
    DoubleSum4 sum;
    over_lanes4(n, [&](int64_t i, int64_t valid) {
        const float32x4_t e = exp_ps(vsubq_f32(load_lanes4(x + i, valid, -INFINITY), max_b));
        store_lanes4(x + i, valid, e);
        sum.add(e);
    });
    const float inv = static_cast<float>(1.0 / sum.total());
    over_lanes4(n, [&](int64_t i, int64_t valid) { store_lanes4(x + i, valid, vmulq_n_f32(load_lanes4(x + i, valid), inv)); });
}

}  // namespace

AttentionKernels neon_attention_kernels() {
    return attention_kernels_of_passes<NeonPasses>(&softmax);
}

}  // namespace inferscope::simd
