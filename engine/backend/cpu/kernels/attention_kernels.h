#pragma once
// The two inner loops of attention over one KV block, for the query heads that share one
// KV head (GQA): scores = Q K^T and out += P V, with K and V stored as F16 or F32 rows
// `row_stride` elements apart (one row per token of the block).
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

struct AttentionKernels {
    // scores[g * scores_stride + t] = scale * dot(q + g * head_dim, k row t)
    void (*scores_f16)(const float* q, int n_q, int head_dim, const uint16_t* k, int64_t row_stride, int n_t, float scale,
                       float* scores, int64_t scores_stride) = nullptr;
    void (*scores_f32)(const float* q, int n_q, int head_dim, const float* k, int64_t row_stride, int n_t, float scale,
                       float* scores, int64_t scores_stride) = nullptr;
    // out[g * head_dim + d] += sum_t p[g * p_stride + t] * v[t * row_stride + d]
    void (*accumulate_f16)(const float* p, int n_q, int64_t p_stride, const uint16_t* v, int64_t row_stride, int n_t,
                           int head_dim, float* out) = nullptr;
    void (*accumulate_f32)(const float* p, int n_q, int64_t p_stride, const float* v, int64_t row_stride, int n_t,
                           int head_dim, float* out) = nullptr;
};

// Kernels of the family `isa`; members a family does not provide come from the one below.
AttentionKernels attention_kernels(CpuIsa isa);

namespace simd {
AttentionKernels avx2_attention_kernels();
AttentionKernels avx512_attention_kernels();
}  // namespace simd

}  // namespace inferscope
