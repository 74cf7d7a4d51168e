// AVX2 attention inner loops. Compiled with AVX2 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include <cmath>
#include <cstring>

#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kernels/exp_avx2.h"
#include "engine/backend/cpu/kernels/lanes8_avx2.h"
#include "engine/backend/cpu/kernels/tuning_avx2.h"

namespace inferscope::simd {
namespace {

// 8 elements starting at d; at a tail the missing lanes are zero.
inline __m256 load8(const uint16_t* row, int d, int valid) {
    if (valid >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + d)));
    uint16_t tail[8] = {};
    std::memcpy(tail, row + d, static_cast<size_t>(valid) * sizeof(uint16_t));
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tail)));
}
inline __m256 load8(const float* row, int d, int valid) {
    if (valid >= 8) return _mm256_loadu_ps(row + d);
    float tail[8] = {};
    std::memcpy(tail, row + d, static_cast<size_t>(valid) * sizeof(float));
    return _mm256_loadu_ps(tail);
}

// The passes of the walks in attention_kernels.h (scores_by_passes, accumulate_by_passes).
struct Avx2Passes {
    static constexpr int kScoreHeads = avx2_tuning::kAttentionScoreHeads;
    static constexpr int kValueChunks = avx2_tuning::kAttentionValueChunks;
    static constexpr int kLanes = 8;

    // Up to 8 tokens at a time from the transposed K block (see attention_kernels.h). Heads is
    // a compile-time count so that the accumulators stay in registers (see attention_avx512.cpp).
    template <typename T, int Heads>
    static void scores(const float* q, int head_dim, const T* kt, int block_tokens, int n_t, float scale, float* out,
                       int64_t out_stride) {
        const __m256 scale_v = _mm256_set1_ps(scale);
        for (int t0 = 0; t0 < n_t; t0 += 8) {
            const int valid = n_t - t0;
            __m256 acc[Heads];
            // Every loop over acc unrolled, or GCC keeps the accumulators on the stack.
#pragma GCC unroll 8
            for (int g = 0; g < Heads; ++g) acc[g] = _mm256_setzero_ps();
            for (int d = 0; d < head_dim; ++d) {
                const __m256 k = load8(kt + static_cast<int64_t>(d) * block_tokens, t0, valid);
#pragma GCC unroll 8
                for (int g = 0; g < Heads; ++g) {
                    acc[g] = _mm256_fmadd_ps(_mm256_set1_ps(q[static_cast<int64_t>(g) * head_dim + d]), k, acc[g]);
                }
            }
#pragma GCC unroll 8
            for (int g = 0; g < Heads; ++g) {
                alignas(32) float lane[8];
                _mm256_store_ps(lane, _mm256_mul_ps(acc[g], scale_v));
                std::memcpy(out + g * out_stride + t0, lane, sizeof(float) * static_cast<size_t>(valid < 8 ? valid : 8));
            }
        }
    }

    // One query head at a time, its Chunks x 8 outputs in registers over the block. Chunks is a
    // compile-time count and every loop over the accumulators is unrolled: otherwise GCC keeps
    // them on the stack.
    template <typename T, int Chunks>
    static void accumulate(const float* p, int n_q, int64_t p_stride, const T* v, int64_t row_stride, int n_t, int head_dim,
                           int first_chunk, float* out) {
        for (int g = 0; g < n_q; ++g) {
            float* og = out + static_cast<int64_t>(g) * head_dim + first_chunk * 8;
            const float* pg = p + g * p_stride;
            __m256 acc[Chunks];
#pragma GCC unroll 8
            for (int c = 0; c < Chunks; ++c) acc[c] = load8(og, c * 8, head_dim - (first_chunk + c) * 8);
            for (int t = 0; t < n_t; ++t) {
                const __m256 weight = _mm256_set1_ps(pg[t]);
                const T* row = v + t * row_stride + first_chunk * 8;
#pragma GCC unroll 8
                for (int c = 0; c < Chunks; ++c) {
                    acc[c] = _mm256_fmadd_ps(weight, load8(row, c * 8, head_dim - (first_chunk + c) * 8), acc[c]);
                }
            }
#pragma GCC unroll 8
            for (int c = 0; c < Chunks; ++c) {
                const int valid = head_dim - (first_chunk + c) * 8;
                if (valid >= 8) {
                    _mm256_storeu_ps(og + c * 8, acc[c]);
                } else {
                    float tail[8];
                    _mm256_storeu_ps(tail, acc[c]);
                    std::memcpy(og + c * 8, tail, static_cast<size_t>(valid) * sizeof(float));
                }
            }
        }
    }
};

// As the AVX-512 softmax (attention_avx512.cpp), eight lanes wide, with the exponentials
// summed in double lanes.
void softmax(float* x, int64_t n) {
    const __m256 lowest = _mm256_set1_ps(-INFINITY);
    __m256 max_v = lowest;
    over_lanes8(n, [&](int64_t i, const __m256i* tail) {
        const __m256 v = load_lanes8(x + i, tail);
        max_v = _mm256_max_ps(max_v, tail != nullptr ? _mm256_blendv_ps(lowest, v, _mm256_castsi256_ps(*tail)) : v);
    });
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, max_v);
    float max_score = lanes[0];
    for (float v : lanes) max_score = v > max_score ? v : max_score;
    const __m256 max_b = _mm256_set1_ps(max_score);
    DoubleSum8 sum;
    over_lanes8(n, [&](int64_t i, const __m256i* tail) {
        __m256 e = exp_ps(_mm256_sub_ps(load_lanes8(x + i, tail), max_b));
        if (tail != nullptr) e = _mm256_and_ps(e, _mm256_castsi256_ps(*tail));  // e^0 past n: not summed
        store_lanes8(x + i, tail, e);
        sum.add(e);
    });
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum.total()));
    over_lanes8(n, [&](int64_t i, const __m256i* tail) { store_lanes8(x + i, tail, _mm256_mul_ps(load_lanes8(x + i, tail), inv)); });
}

}  // namespace

AttentionKernels avx2_attention_kernels() {
    return attention_kernels_of_passes<Avx2Passes>(&softmax);
}

}  // namespace inferscope::simd
