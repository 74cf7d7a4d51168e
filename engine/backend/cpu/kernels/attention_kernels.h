#pragma once
// The inner loops of attention of the query heads that share one KV head (GQA) over a
// sequence's cache: scores = Q K^T, softmax, and out += P V.
//
// The sequence's n_ctx tokens fill its blocks in order (the last one may be partial); the
// kernels get, per block, a pointer to this KV head's part of it. Within a block, K is
// stored transposed ([head_dim][block_tokens]: the values of one dimension for consecutive
// tokens are contiguous), so one vector load serves 16 tokens and no horizontal sums are
// needed; V is stored token by token ([token][...], rows `row_stride` elements apart).
// Elements are F16 or F32. The kernels walk the whole list, so accumulators stay in
// registers from one block to the next, and prefetch the blocks ahead themselves (the
// blocks lie anywhere in the pool, where the hardware prefetchers cannot follow).
#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

struct AttentionKernels {
    // scores[g * scores_stride + t] = scale * sum_d q[g * head_dim + d] * K_t[d], t < n_ctx,
    // K_t[d] = kt_blocks[t / block_tokens][d * block_tokens + t % block_tokens]
    void (*scores_f16)(const float* q, int n_q, int head_dim, const uint16_t* const* kt_blocks, int block_tokens, int n_ctx,
                       float scale, float* scores, int64_t scores_stride) = nullptr;
    void (*scores_f32)(const float* q, int n_q, int head_dim, const float* const* kt_blocks, int block_tokens, int n_ctx,
                       float scale, float* scores, int64_t scores_stride) = nullptr;
    // x[i] = exp(x[i] - max) / sum over the n values (the sum accumulated in double)
    void (*softmax)(float* x, int64_t n) = nullptr;
    // out[g * head_dim + d] += sum_t p[g * p_stride + t] * V_t[d], t < n_ctx,
    // V_t[d] = v_blocks[t / block_tokens][(t % block_tokens) * row_stride + d]
    void (*accumulate_f16)(const float* p, int n_q, int64_t p_stride, const uint16_t* const* v_blocks, int block_tokens,
                           int64_t row_stride, int n_ctx, int head_dim, float* out) = nullptr;
    void (*accumulate_f32)(const float* p, int n_q, int64_t p_stride, const float* const* v_blocks, int block_tokens,
                           int64_t row_stride, int n_ctx, int head_dim, float* out) = nullptr;
};

namespace simd {

// How many blocks ahead the kernels request a block's bytes.
constexpr int kKvBlocksAhead = 2;

// Requests every cache line of `bytes` bytes at p (the run need not start on a line).
inline void prefetch_kv_bytes(const void* p, size_t bytes) {
    const auto* first = static_cast<const char*>(p);
    for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(first + offset);
    __builtin_prefetch(first + bytes - 1);
}

// Calls f(block index, first token, tokens in the block) for the blocks holding n_ctx
// tokens, each block's `block_bytes` requested kKvBlocksAhead blocks before its turn.
template <typename T, class F>
inline void for_each_kv_block(const T* const* blocks, int block_tokens, int n_ctx, size_t block_bytes, F&& f) {
    const int n_blocks = (n_ctx + block_tokens - 1) / block_tokens;
    for (int b = 0; b < n_blocks && b < kKvBlocksAhead; ++b) prefetch_kv_bytes(blocks[b], block_bytes);
    for (int b = 0; b < n_blocks; ++b) {
        if (b + kKvBlocksAhead < n_blocks) prefetch_kv_bytes(blocks[b + kKvBlocksAhead], block_bytes);
        const int first = b * block_tokens;
        f(b, first, n_ctx - first < block_tokens ? n_ctx - first : block_tokens);
    }
}

}  // namespace simd

// Kernels of the family `isa`; members a family does not provide come from the one below.
AttentionKernels attention_kernels(CpuIsa isa);

namespace simd {
AttentionKernels avx2_attention_kernels();
AttentionKernels avx512_attention_kernels();
}  // namespace simd

}  // namespace inferscope
