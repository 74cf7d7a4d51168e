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
#include "engine/backend/cpu/kernels/compile_time_count.h"

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

// How far ahead the kernels request the blocks they will read. Two ways, as the kernels'
// loops differ:
// - on entering block b, all of block b + kKvBlocksAhead (enter(); the AVX2 kernels, whose
//   passes go over each block several times). Two blocks ahead are enough to hide the
//   memory latency; requesting further ahead gains nothing.
// - a line at a time while reading block b, the line at the same place in block
//   b + kKvBlocksAheadByLine (ahead_of(); the AVX-512 kernels, one pass over all blocks).
//   Requesting whole blocks at once makes attention's memory time add to its compute time
//   instead of overlapping it: each requested line holds one of the core's few fill buffers
//   until it arrives, and the loop stalls behind a block's worth of them. Spread line by
//   line, three blocks ahead is the distance that overlaps them best.
constexpr int kKvBlocksAhead = 2;
constexpr int kKvBlocksAheadByLine = 3;

// Requests every cache line of `bytes` bytes at p (the run need not start on a line).
inline void prefetch_kv_bytes(const void* p, size_t bytes) {
    const auto* first = static_cast<const char*>(p);
    for (size_t offset = 0; offset < bytes; offset += 64) __builtin_prefetch(first + offset);
    __builtin_prefetch(first + bytes - 1);
}

// The walk over the blocks that hold n_ctx tokens, in the kernels' own loops (a callback
// could make their accumulators addressable): construction requests the first blocks, then
// either enter(b) the one kKvBlocksAhead further or the kernel, line by line, the block
// ahead_of(b) names. A pass that repeats an earlier one over the same blocks (the next V
// chunks, another group of heads) requests them again: it finds them in L2, and the
// requests bring them to L1 before the pass reaches them.
template <typename T>
struct KvBlockWalk {
    const T* const* blocks;
    int block_tokens;
    int n_ctx;
    size_t block_bytes;
    int n_blocks;

    // Over K^T parts ([head_dim][block_tokens]).
    static KvBlockWalk keys(const T* const* blocks, int block_tokens, int n_ctx, int head_dim) {
        return KvBlockWalk(blocks, block_tokens, n_ctx, sizeof(T) * static_cast<size_t>(head_dim * block_tokens));
    }
    // Over V parts (block_tokens rows of head_dim, row_stride apart).
    static KvBlockWalk values(const T* const* blocks, int block_tokens, int n_ctx, int64_t row_stride, int head_dim) {
        return KvBlockWalk(blocks, block_tokens, n_ctx, sizeof(T) * static_cast<size_t>((block_tokens - 1) * row_stride + head_dim));
    }

    // Block b's data; requests block b + kKvBlocksAhead.
    const T* enter(int b) const {
        if (b + kKvBlocksAhead < n_blocks) prefetch_kv_bytes(blocks[b + kKvBlocksAhead], block_bytes);
        return blocks[b];
    }
    // Where a kernel reading block b requests lines: block b + kKvBlocksAheadByLine, or
    // block b itself near the end (the requests then find it cached).
    const T* ahead_of(int b) const {
        return blocks[b + kKvBlocksAheadByLine < n_blocks ? b + kKvBlocksAheadByLine : b];
    }
    int first_token(int b) const { return b * block_tokens; }
    int tokens_in(int b) const { return n_ctx - b * block_tokens < block_tokens ? n_ctx - b * block_tokens : block_tokens; }

private:
    KvBlockWalk(const T* const* blocks_, int block_tokens_, int n_ctx_, size_t block_bytes_)
        : blocks(blocks_), block_tokens(block_tokens_), n_ctx(n_ctx_), block_bytes(block_bytes_),
          n_blocks((n_ctx_ + block_tokens_ - 1) / block_tokens_) {
        // The blocks the walk starts on, before the first that enter() or ahead_of() requests ahead.
        const int first_requested = kKvBlocksAhead > kKvBlocksAheadByLine ? kKvBlocksAhead : kKvBlocksAheadByLine;
        for (int b = 0; b < n_blocks && b < first_requested; ++b) prefetch_kv_bytes(blocks[b], block_bytes);
    }
};

// The scores and weighted sums of the kernels that go over each block several times (AVX2,
// NEON), over an ISA's passes P. Per K block, the query heads in groups of up to
// P::kScoreHeads, each group one P::scores<T, heads>(q, head_dim, kt, block_tokens,
// tokens_in_block, scale, out, out_stride); per V block, the head's chunks of P::kLanes
// dimensions in runs of up to P::kValueChunks, each run one P::accumulate<T, chunks>(p, n_q,
// p_stride, v, row_stride, tokens_in_block, head_dim, first_chunk, out). The counts are
// compile-time so that the passes' accumulators stay in registers.
template <class P, typename T>
void scores_by_passes(const float* q, int n_q, int head_dim, const T* const* kt_blocks, int block_tokens, int n_ctx, float scale,
                      float* out, int64_t out_stride) {
    const auto walk = KvBlockWalk<T>::keys(kt_blocks, block_tokens, n_ctx, head_dim);
    for (int b = 0; b < walk.n_blocks; ++b) {
        const T* kt = walk.enter(b);
        for (int g0 = 0; g0 < n_q; g0 += P::kScoreHeads) {
            const float* q_group = q + static_cast<int64_t>(g0) * head_dim;
            float* out_group = out + g0 * out_stride + walk.first_token(b);
            with_compile_time_count<P::kScoreHeads>(n_q - g0, [&](auto heads) {
                P::template scores<T, decltype(heads)::value>(q_group, head_dim, kt, block_tokens, walk.tokens_in(b), scale, out_group,
                                                              out_stride);
            });
        }
    }
}

template <class P, typename T>
void accumulate_by_passes(const float* p, int n_q, int64_t p_stride, const T* const* v_blocks, int block_tokens,
                          int64_t row_stride, int n_ctx, int head_dim, float* out) {
    const int chunks = (head_dim + P::kLanes - 1) / P::kLanes;
    const auto walk = KvBlockWalk<T>::values(v_blocks, block_tokens, n_ctx, row_stride, head_dim);
    for (int b = 0; b < walk.n_blocks; ++b) {
        const T* v = walk.enter(b);
        for (int c0 = 0; c0 < chunks; c0 += P::kValueChunks) {
            with_compile_time_count<P::kValueChunks>(chunks - c0, [&](auto count) {
                P::template accumulate<T, decltype(count)::value>(p + walk.first_token(b), n_q, p_stride, v, row_stride,
                                                                  walk.tokens_in(b), head_dim, c0, out);
            });
        }
    }
}

// The table of a family whose scores and weighted sums run the walks above over its passes P.
template <class P>
AttentionKernels attention_kernels_of_passes(void (*softmax)(float* x, int64_t n)) {
    return {.scores_f16 = &scores_by_passes<P, uint16_t>,
            .scores_f32 = &scores_by_passes<P, float>,
            .softmax = softmax,
            .accumulate_f16 = &accumulate_by_passes<P, uint16_t>,
            .accumulate_f32 = &accumulate_by_passes<P, float>};
}

}  // namespace simd

// Kernels of the family `isa`; members a family does not provide come from the one below.
AttentionKernels attention_kernels(CpuIsa isa);

namespace simd {
AttentionKernels avx2_attention_kernels();
AttentionKernels avx512_attention_kernels();
AttentionKernels neon_attention_kernels();
}  // namespace simd

}  // namespace inferscope
