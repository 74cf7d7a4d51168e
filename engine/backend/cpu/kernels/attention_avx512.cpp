// AVX-512 attention inner loops. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include "engine/backend/cpu/kernels/attention_kernels.h"

namespace inferscope::simd {
namespace {

// 16 elements starting at d (fewer at the tail: `mask` selects the valid lanes).
inline __m512 load16(const uint16_t* row, int d, __mmask16 mask) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, row + d));
}
inline __m512 load16(const float* row, int d, __mmask16 mask) { return _mm512_maskz_loadu_ps(mask, row + d); }

inline __mmask16 lanes(int head_dim, int d) {
    const int left = head_dim - d;
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
}

template <typename T>
void scores(const float* q, int n_q, int head_dim, const T* k, int64_t row_stride, int n_t, float scale, float* out,
            int64_t out_stride) {
    for (int t = 0; t < n_t; ++t) {
        const T* row = k + t * row_stride;
        for (int g = 0; g < n_q; ++g) {
            const float* qg = q + static_cast<int64_t>(g) * head_dim;
            __m512 acc = _mm512_setzero_ps();
            for (int d = 0; d < head_dim; d += 16) {
                const __mmask16 m = lanes(head_dim, d);
                acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, qg + d), load16(row, d, m), acc);
            }
            out[g * out_stride + t] = _mm512_reduce_add_ps(acc) * scale;
        }
    }
}

// One query head at a time with its output in registers (head dims up to 128), so each V
// row is converted once per head and the output is written once.
template <typename T>
void accumulate(const float* p, int n_q, int64_t p_stride, const T* v, int64_t row_stride, int n_t, int head_dim,
                float* out) {
    constexpr int kMaxChunks = 8;
    const int chunks = (head_dim + 15) / 16;
    for (int g = 0; g < n_q; ++g) {
        float* og = out + static_cast<int64_t>(g) * head_dim;
        const float* pg = p + g * p_stride;
        for (int c0 = 0; c0 < chunks; c0 += kMaxChunks) {
            const int c1 = chunks - c0 < kMaxChunks ? chunks : c0 + kMaxChunks;
            __m512 acc[kMaxChunks];
            for (int c = c0; c < c1; ++c) acc[c - c0] = _mm512_maskz_loadu_ps(lanes(head_dim, c * 16), og + c * 16);
            for (int t = 0; t < n_t; ++t) {
                const __m512 weight = _mm512_set1_ps(pg[t]);
                const T* row = v + t * row_stride;
                for (int c = c0; c < c1; ++c) {
                    acc[c - c0] = _mm512_fmadd_ps(weight, load16(row, c * 16, lanes(head_dim, c * 16)), acc[c - c0]);
                }
            }
            for (int c = c0; c < c1; ++c) _mm512_mask_storeu_ps(og + c * 16, lanes(head_dim, c * 16), acc[c - c0]);
        }
    }
}

}  // namespace

AttentionKernels avx512_attention_kernels() {
    AttentionKernels k;
    k.scores_f16 = &scores<uint16_t>;
    k.scores_f32 = &scores<float>;
    k.accumulate_f16 = &accumulate<uint16_t>;
    k.accumulate_f32 = &accumulate<float>;
    return k;
}

}  // namespace inferscope::simd
