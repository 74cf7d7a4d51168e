#pragma once
// The analytic cost of one forward pass, from the model's shapes alone: multiply-accumulates
// (MACs) and the memory the pass holds at its peak. Used to put numbers on "with a KV cache
// a step is linear in the context, without it quadratic".
#include <cstdint>

namespace inferscope {

struct ModelConfig;

// MACs of one forward pass that computes `n_new` tokens after `n_past` cached ones and
// produces logits for `n_logits` of them. Per layer and new token:
//  - projections: n_embd x (q_dim + 2 kv_dim) for Q, K, V and q_dim x n_embd for O;
//  - attention: per query head, QK^T (head_dim per position it sees) and PV (the same), a
//    token at position p seeing p + 1 positions (causal);
//  - FFN: 3 x n_embd x n_ff (gate, up, down).
// The output head: n_embd x n_vocab per position whose logits are wanted (the engine
// computes no others). Not counted: norms, RoPE, softmax, SwiGLU, biases and residual adds,
// which are O(n_embd) per token and multiply with no weight matrix or cache.
struct ForwardMacs {
    uint64_t projections = 0;
    uint64_t attention = 0;
    uint64_t ffn = 0;
    uint64_t output_head = 0;
    uint64_t total() const { return projections + attention + ffn + output_head; }
};
ForwardMacs forward_macs(const ModelConfig& config, int n_past, int n_new, int n_logits);

// Bytes of one head's fp32 attention scores for `n_query` queries over `n_context`
// positions: n x n without a cache (every query again), 1 x n with one.
uint64_t attention_score_bytes_per_head(int n_query, int n_context);

// The memory one forward pass holds at its peak, weights excluded (both paths read the same
// weights):
//  - kv_bytes: K and V of every position the pass attends over (context x KV bytes/token),
//    which a pass without a cache also builds, for all its positions, before it can attend;
//  - activation_bytes: one layer's fp32 working set per new token (residual, normed input,
//    Q, K, V, attention output, FFN gate and up);
//  - score_bytes: one layer's fp32 attention scores, all query heads (n_head x n_new x context);
//  - logits_bytes: n_logits x n_vocab fp32.
struct ForwardMemory {
    uint64_t kv_bytes = 0;
    uint64_t activation_bytes = 0;
    uint64_t score_bytes = 0;
    uint64_t logits_bytes = 0;
    uint64_t total() const { return kv_bytes + activation_bytes + score_bytes + logits_bytes; }
};
ForwardMemory forward_peak_memory(const ModelConfig& config, int n_past, int n_new, int n_logits, int kv_element_bytes);

}  // namespace inferscope
