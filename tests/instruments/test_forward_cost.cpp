// The analytic MAC and memory counts against values worked out by hand from the shapes.
#include "engine/instruments/forward_cost.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace inferscope {
namespace {

// Two layers, n_embd 64, 4 heads x 16 (q_dim 64), 2 KV heads (kv_dim 32), n_ff 96, vocab 300.
ModelConfig tiny_config() {
    ModelConfig c;
    c.n_layer = 2;
    c.n_embd = 64;
    c.n_head = 4;
    c.n_head_kv = 2;
    c.head_dim = 16;
    c.n_ff = 96;
    c.n_vocab = 300;
    return c;
}

TEST(ForwardMacs, OneCachedTokenIsLinearInTheContext) {
    // One new token at position 9 (n_past 9) sees 10 positions.
    const ForwardMacs m = forward_macs(tiny_config(), 9, 1, 1);
    EXPECT_EQ(m.projections, 2u * (64 * (64 + 2 * 32) + 64 * 64));  // 2 x 12,288 = 24,576
    EXPECT_EQ(m.attention, 2u * 4 * 2 * 16 * 10);                   // layers x heads x (QK + PV) x head_dim x 10
    EXPECT_EQ(m.ffn, 2u * 3 * 64 * 96);
    EXPECT_EQ(m.output_head, 64u * 300);
    EXPECT_EQ(m.total(), 24576u + 2560u + 36864u + 19200u);
}

TEST(ForwardMacs, RecomputingTheSequenceIsQuadraticInAttention) {
    // 10 tokens from scratch: positions 0..9 see 1 + 2 + ... + 10 = 55 positions; one logits row.
    const ForwardMacs m = forward_macs(tiny_config(), 0, 10, 1);
    EXPECT_EQ(m.projections, 10u * 2 * (64 * (64 + 2 * 32) + 64 * 64));
    EXPECT_EQ(m.attention, 2u * 4 * 2 * 16 * 55);
    EXPECT_EQ(m.ffn, 10u * 2 * 3 * 64 * 96);
    EXPECT_EQ(m.output_head, 64u * 300);
    // A chunk continuing a cache: 3 tokens after 7 see 8 + 9 + 10 = 27 positions.
    EXPECT_EQ(forward_macs(tiny_config(), 7, 3, 0).attention, 2u * 4 * 2 * 16 * 27);
    EXPECT_EQ(forward_macs(tiny_config(), 7, 3, 0).output_head, 0u);
}

TEST(ForwardMacs, RejectsImpossiblePasses) {
    EXPECT_THROW(forward_macs(tiny_config(), -1, 1, 1), InvalidArgument);
    EXPECT_THROW(forward_macs(tiny_config(), 0, 0, 0), InvalidArgument);
    EXPECT_THROW(forward_macs(tiny_config(), 0, 2, 3), InvalidArgument);
}

TEST(AttentionScores, TheWorkedExampleAtN4096) {
    // n x n fp32 = 4096^2 x 4 = 67,108,864 bytes (67 MB); 1 x n = 16,384 bytes (16 KB).
    EXPECT_EQ(attention_score_bytes_per_head(4096, 4096), 67108864u);
    EXPECT_EQ(attention_score_bytes_per_head(1, 4096), 16384u);
    EXPECT_THROW(attention_score_bytes_per_head(-1, 4), InvalidArgument);
}

TEST(ForwardMemory, CountsCacheActivationsScoresAndLogits) {
    const ModelConfig c = tiny_config();
    // Cached step: one token at context 10, f16 cache.
    const ForwardMemory cached = forward_peak_memory(c, 9, 1, 1, 2);
    EXPECT_EQ(cached.kv_bytes, 10u * 2 * 2 * 32 * 2);                       // context x (2 x layers x kv_dim x 2 B)
    EXPECT_EQ(cached.activation_bytes, (2u * 64 + 2 * 64 + 2 * 32 + 2 * 96) * 4);  // 512 floats
    EXPECT_EQ(cached.score_bytes, 4u * 1 * 10 * 4);
    EXPECT_EQ(cached.logits_bytes, 300u * 4);
    // Recomputed: the same context, all 10 tokens in flight.
    const ForwardMemory recomputed = forward_peak_memory(c, 0, 10, 1, 2);
    EXPECT_EQ(recomputed.kv_bytes, cached.kv_bytes);
    EXPECT_EQ(recomputed.activation_bytes, 10 * cached.activation_bytes);
    EXPECT_EQ(recomputed.score_bytes, 4u * 10 * 10 * 4);
    EXPECT_EQ(recomputed.total(), recomputed.kv_bytes + recomputed.activation_bytes + recomputed.score_bytes + 1200u);
    EXPECT_THROW(forward_peak_memory(c, 0, 1, 1, 0), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
