// AVX-512 attention inner loops. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include <cmath>

#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kernels/compile_time_count.h"
#include "engine/backend/cpu/kernels/exp_avx512.h"
#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/tuning_avx512.h"

namespace inferscope::simd {
namespace {

constexpr int kMaxHeadsPerPass = avx512_tuning::kAttentionScoreHeads;

// 16 elements starting at `index` (the lanes outside `mask` read as zero).
inline __m512 load16(const uint16_t* p, int64_t index, __mmask16 mask) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p + index));
}
inline __m512 load16(const float* p, int64_t index, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, p + index); }

// Two runs of up to 16 tokens (of one block or of two) at a time: one load of a K^T row
// gives one dimension of 16 tokens, and each broadcast query value feeds the multiply-adds
// of both runs (one run per broadcast made the broadcasts as many as the multiply-adds).
// Each of the Heads query heads accumulates its 2 x 16 scores in two registers. Heads is a
// compile-time count so that the accumulators stay in registers (with a run-time count
// they lived on the stack, a store-to-load chain per multiply-add: that made the score loop
// most of the attention time at long contexts).
// ahead_a/ahead_b: the same runs in the blocks that the walk requests next (ahead_of), one
// K^T row per dimension as the loop goes (see kKvBlocksAheadByLine).
template <typename T, int Heads>
void scores_two_runs(const float* q, int head_dim, const T* kt_a, const T* kt_b, const T* ahead_a, const T* ahead_b,
                     int block_tokens, __mmask16 mask_a, __mmask16 mask_b, __m512 scale_v, float* out_a, float* out_b,
                     int64_t out_stride) {
    __m512 acc_a[Heads], acc_b[Heads];
#pragma GCC unroll 8
    for (int g = 0; g < Heads; ++g) acc_a[g] = acc_b[g] = _mm512_setzero_ps();
    for (int d = 0; d < head_dim; ++d) {
        const int64_t row = static_cast<int64_t>(d) * block_tokens;
        __builtin_prefetch(ahead_a + row);
        __builtin_prefetch(ahead_b + row);
        const __m512 k_a = load16(kt_a, row, mask_a);
        const __m512 k_b = load16(kt_b, row, mask_b);
#pragma GCC unroll 8
        for (int g = 0; g < Heads; ++g) {
            const __m512 qd = _mm512_set1_ps(q[static_cast<int64_t>(g) * head_dim + d]);
            acc_a[g] = _mm512_fmadd_ps(qd, k_a, acc_a[g]);
            acc_b[g] = _mm512_fmadd_ps(qd, k_b, acc_b[g]);
        }
    }
#pragma GCC unroll 8
    for (int g = 0; g < Heads; ++g) {
        _mm512_mask_storeu_ps(out_a + g * out_stride, mask_a, _mm512_mul_ps(acc_a[g], scale_v));
        _mm512_mask_storeu_ps(out_b + g * out_stride, mask_b, _mm512_mul_ps(acc_b[g], scale_v));
    }
}

// The runs of 16 tokens of every block in order, taken in pairs (a last odd run with an
// empty partner).
template <typename T, int Heads>
void scores_over_blocks(const float* q, int head_dim, const T* const* kt_blocks, int block_tokens, int n_ctx, __m512 scale_v,
                        float* out, int64_t out_stride) {
    const auto walk = KvBlockWalk<T>::keys(kt_blocks, block_tokens, n_ctx, head_dim);
    const T* pending = nullptr;
    const T* pending_ahead = nullptr;
    __mmask16 pending_mask = 0;
    int pending_first = 0;
    for (int b = 0; b < walk.n_blocks; ++b) {
        const T* kt = walk.blocks[b];
        const T* ahead = walk.ahead_of(b);
        const int first = walk.first_token(b);
        const int n_t = walk.tokens_in(b);
        for (int t0 = 0; t0 < n_t; t0 += 16) {
            const T* run = kt + t0;
            if (pending == nullptr) {
                pending = run;
                pending_ahead = ahead + t0;
                pending_mask = first_lanes(n_t - t0);
                pending_first = first + t0;
                continue;
            }
            scores_two_runs<T, Heads>(q, head_dim, pending, run, pending_ahead, ahead + t0, block_tokens, pending_mask,
                                      first_lanes(n_t - t0), scale_v, out + pending_first, out + first + t0, out_stride);
            pending = nullptr;
        }
    }
    if (pending != nullptr) {
        scores_two_runs<T, Heads>(q, head_dim, pending, pending, pending_ahead, pending_ahead, block_tokens, pending_mask, 0,
                                  scale_v, out + pending_first, out + pending_first, out_stride);
    }
}

template <typename T>
void scores(const float* q, int n_q, int head_dim, const T* const* kt_blocks, int block_tokens, int n_ctx, float scale,
            float* out, int64_t out_stride) {
    const __m512 scale_v = _mm512_set1_ps(scale);
    for (int g0 = 0; g0 < n_q; g0 += kMaxHeadsPerPass) {
        const float* qg = q + static_cast<int64_t>(g0) * head_dim;
        float* og = out + g0 * out_stride;
        with_compile_time_count<kMaxHeadsPerPass>(n_q - g0, [&](auto heads) {
            scores_over_blocks<T, decltype(heads)::value>(qg, head_dim, kt_blocks, block_tokens, n_ctx, scale_v, og, out_stride);
        });
    }
}

// Token-major: each V row (Chunks vectors of it per pass) is converted once and feeds
// every query head of the pass, whose outputs (Heads x Chunks vectors) stay in registers
// over all the blocks. Against the per-head order this converts V once instead of once per
// head, and the Heads x Chunks independent accumulations hide the FMA latency that the
// chains of one head cannot. Heads and Chunks are compile-time counts and leave registers
// to spare: with a run-time head count, or with 28 accumulators, GCC keeps the accumulators
// on the stack (a store per multiply-add), which slows the V pass severely.
template <typename T, int Chunks, int Heads>
void accumulate_pass(const float* p, int64_t p_stride, const T* const* v_blocks, int block_tokens, int64_t row_stride,
                     int n_ctx, int head_dim, int first_chunk, float* out) {
    __mmask16 mask[Chunks];
#pragma GCC unroll 16
    for (int c = 0; c < Chunks; ++c) mask[c] = first_lanes(head_dim - (first_chunk + c) * 16);
    float* out_chunk = out + first_chunk * 16;
    __m512 acc[Heads][Chunks];
#pragma GCC unroll 16
    for (int g = 0; g < Heads; ++g) {
#pragma GCC unroll 16
        for (int c = 0; c < Chunks; ++c) acc[g][c] = _mm512_maskz_loadu_ps(mask[c], out_chunk + g * head_dim + c * 16);
    }
    const auto walk = KvBlockWalk<T>::values(v_blocks, block_tokens, n_ctx, row_stride, head_dim);
    for (int b = 0; b < walk.n_blocks; ++b) {
        const T* v_chunk = walk.blocks[b] + first_chunk * 16;
        const T* ahead_chunk = walk.ahead_of(b) + first_chunk * 16;  // requested a row at a time
        const float* p_block = p + walk.first_token(b);
        const int n_t = walk.tokens_in(b);
        for (int t = 0; t < n_t; ++t) {
            __builtin_prefetch(ahead_chunk + t * row_stride);
            const T* row = v_chunk + t * row_stride;
            __m512 vr[Chunks];
#pragma GCC unroll 16
            for (int c = 0; c < Chunks; ++c) vr[c] = load16(row, c * 16, mask[c]);
#pragma GCC unroll 16
            for (int g = 0; g < Heads; ++g) {
                const __m512 weight = _mm512_set1_ps(p_block[g * p_stride + t]);
#pragma GCC unroll 16
                for (int c = 0; c < Chunks; ++c) acc[g][c] = _mm512_fmadd_ps(weight, vr[c], acc[g][c]);
            }
        }
    }
#pragma GCC unroll 16
    for (int g = 0; g < Heads; ++g) {
#pragma GCC unroll 16
        for (int c = 0; c < Chunks; ++c) _mm512_mask_storeu_ps(out_chunk + g * head_dim + c * 16, mask[c], acc[g][c]);
    }
}

// Up to kHeads heads x 2 chunks (32 dimensions) per pass.
template <typename T>
void accumulate(const float* p, int n_q, int64_t p_stride, const T* const* v_blocks, int block_tokens, int64_t row_stride,
                int n_ctx, int head_dim, float* out) {
    constexpr int kHeads = avx512_tuning::kAttentionValueHeads;
    const int chunks = (head_dim + 15) / 16;
    for (int c0 = 0; c0 < chunks; c0 += 2) {
        for (int g0 = 0; g0 < n_q; g0 += kHeads) {
            const int heads = n_q - g0 < kHeads ? n_q - g0 : kHeads;
            const float* pg = p + g0 * p_stride;
            float* og = out + static_cast<int64_t>(g0) * head_dim;
            with_compile_time_count<kHeads>(heads, [&](auto h) {
                if (chunks - c0 >= 2) {
                    accumulate_pass<T, 2, decltype(h)::value>(pg, p_stride, v_blocks, block_tokens, row_stride, n_ctx, head_dim, c0, og);
                } else {
                    accumulate_pass<T, 1, decltype(h)::value>(pg, p_stride, v_blocks, block_tokens, row_stride, n_ctx, head_dim, c0, og);
                }
            });
        }
    }
}

void softmax(float* x, int64_t n) {
    __m512 max_v = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) {
        max_v = _mm512_max_ps(max_v, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), first_lanes(n - i), x + i));
    }
    const __m512 max_b = _mm512_set1_ps(_mm512_reduce_max_ps(max_v));
    __m512 sum_v = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 e = exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), max_b));
        _mm512_mask_storeu_ps(x + i, m, e);
        sum_v = _mm512_add_ps(sum_v, _mm512_maskz_mov_ps(m, e));
    }
    alignas(64) float partial[16];
    _mm512_store_ps(partial, sum_v);
    double sum = 0.0;
    for (float s : partial) sum += static_cast<double>(s);
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), inv));
    }
}

}  // namespace

AttentionKernels avx512_attention_kernels() {
    return {.scores_f16 = &scores<uint16_t>, .scores_f32 = &scores<float>, .softmax = &softmax,
            .accumulate_f16 = &accumulate<uint16_t>, .accumulate_f32 = &accumulate<float>};
}

}  // namespace inferscope::simd
