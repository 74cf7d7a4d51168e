// AVX2 attention inner loops. Compiled with AVX2 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include <cstring>

#include "engine/backend/cpu/kernels/attention_kernels.h"

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

inline float reduce_add(__m256 v) {
    const __m128 sum4 = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    const __m128 sum2 = _mm_add_ps(sum4, _mm_movehl_ps(sum4, sum4));
    return _mm_cvtss_f32(_mm_add_ss(sum2, _mm_shuffle_ps(sum2, sum2, 1)));
}

template <typename T>
void scores(const float* q, int n_q, int head_dim, const T* k, int64_t row_stride, int n_t, float scale, float* out,
            int64_t out_stride) {
    for (int t = 0; t < n_t; ++t) {
        const T* row = k + t * row_stride;
        for (int g = 0; g < n_q; ++g) {
            const float* qg = q + static_cast<int64_t>(g) * head_dim;
            __m256 acc = _mm256_setzero_ps();
            for (int d = 0; d < head_dim; d += 8) {
                acc = _mm256_fmadd_ps(load8(qg, d, head_dim - d), load8(row, d, head_dim - d), acc);
            }
            out[g * out_stride + t] = reduce_add(acc) * scale;
        }
    }
}

template <typename T>
void accumulate(const float* p, int n_q, int64_t p_stride, const T* v, int64_t row_stride, int n_t, int head_dim,
                float* out) {
    constexpr int kMaxChunks = 8;
    const int chunks = (head_dim + 7) / 8;
    for (int g = 0; g < n_q; ++g) {
        float* og = out + static_cast<int64_t>(g) * head_dim;
        const float* pg = p + g * p_stride;
        for (int c0 = 0; c0 < chunks; c0 += kMaxChunks) {
            const int c1 = chunks - c0 < kMaxChunks ? chunks : c0 + kMaxChunks;
            __m256 acc[kMaxChunks];
            for (int c = c0; c < c1; ++c) acc[c - c0] = load8(og, c * 8, head_dim - c * 8);
            for (int t = 0; t < n_t; ++t) {
                const __m256 weight = _mm256_set1_ps(pg[t]);
                const T* row = v + t * row_stride;
                for (int c = c0; c < c1; ++c) acc[c - c0] = _mm256_fmadd_ps(weight, load8(row, c * 8, head_dim - c * 8), acc[c - c0]);
            }
            for (int c = c0; c < c1; ++c) {
                const int valid = head_dim - c * 8;
                if (valid >= 8) {
                    _mm256_storeu_ps(og + c * 8, acc[c - c0]);
                } else {
                    float tail[8];
                    _mm256_storeu_ps(tail, acc[c - c0]);
                    std::memcpy(og + c * 8, tail, static_cast<size_t>(valid) * sizeof(float));
                }
            }
        }
    }
}

}  // namespace

AttentionKernels avx2_attention_kernels() {
    AttentionKernels k;
    k.scores_f16 = &scores<uint16_t>;
    k.scores_f32 = &scores<float>;
    k.accumulate_f16 = &accumulate<uint16_t>;
    k.accumulate_f32 = &accumulate<float>;
    return k;
}

}  // namespace inferscope::simd
