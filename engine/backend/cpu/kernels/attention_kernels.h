#pragma once
// The inner loops of attention over one KV block, for the query heads that share one KV
// head (GQA): scores = Q K^T, softmax, and out += P V.
//
// Within a block, K is stored transposed per KV head ([head_dim][block_tokens]: the values
// of one dimension for consecutive tokens are contiguous), so one vector load serves 16
// tokens and no horizontal sums are needed; V is stored token by token ([token][...], rows
// `row_stride` elements apart). Elements are F16 or F32.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

struct AttentionKernels {
    // scores[g * scores_stride + t] = scale * sum_d q[g * head_dim + d] * kt[d * block_tokens + t], t < n_t
    void (*scores_f16)(const float* q, int n_q, int head_dim, const uint16_t* kt, int block_tokens, int n_t, float scale,
                       float* scores, int64_t scores_stride) = nullptr;
    void (*scores_f32)(const float* q, int n_q, int head_dim, const float* kt, int block_tokens, int n_t, float scale,
                       float* scores, int64_t scores_stride) = nullptr;
    // x[i] = exp(x[i] - max) / sum over the n values (the sum accumulated in double)
    void (*softmax)(float* x, int64_t n) = nullptr;
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
