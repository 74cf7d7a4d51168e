#include "engine/instruments/forward_cost.h"

#include <string>

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace inferscope {
namespace {

constexpr uint64_t kFp32Bytes = 4;

void check_pass(int n_past, int n_new, int n_logits) {
    if (n_past < 0 || n_new < 1 || n_logits < 0 || n_logits > n_new) {
        throw InvalidArgument("a forward pass needs n_past >= 0, n_new >= 1 and 0 <= n_logits <= n_new (got " +
                              std::to_string(n_past) + ", " + std::to_string(n_new) + ", " + std::to_string(n_logits) + ")");
    }
}

uint64_t u64(int value) { return static_cast<uint64_t>(value); }

}  // namespace

ForwardMacs forward_macs(const ModelConfig& c, int n_past, int n_new, int n_logits) {
    check_pass(n_past, n_new, n_logits);
    const uint64_t layers = u64(c.n_layer);
    const uint64_t tokens = u64(n_new);
    ForwardMacs m;
    m.projections = layers * tokens * (u64(c.n_embd) * (u64(c.q_dim()) + 2 * u64(c.kv_dim())) + u64(c.q_dim()) * u64(c.n_embd));
    // Positions seen by the new tokens: (n_past + 1) + ... + (n_past + n_new).
    const uint64_t positions_seen = tokens * (2 * u64(n_past) + tokens + 1) / 2;
    m.attention = layers * u64(c.n_head) * 2 * u64(c.head_dim) * positions_seen;
    m.ffn = layers * tokens * 3 * u64(c.n_embd) * u64(c.n_ff);
    m.output_head = u64(n_logits) * u64(c.n_embd) * u64(c.n_vocab);
    return m;
}

uint64_t attention_score_bytes_per_head(int n_query, int n_context) {
    if (n_query < 0 || n_context < 0) throw InvalidArgument("attention score sizes cannot be negative");
    return u64(n_query) * u64(n_context) * kFp32Bytes;
}

ForwardMemory forward_peak_memory(const ModelConfig& c, int n_past, int n_new, int n_logits, int kv_element_bytes) {
    check_pass(n_past, n_new, n_logits);
    if (kv_element_bytes <= 0) throw InvalidArgument("KV element bytes must be positive");
    const int context = n_past + n_new;
    ForwardMemory m;
    m.kv_bytes = u64(context) * c.kv_bytes_per_token(kv_element_bytes);
    const uint64_t floats_per_token =
        2 * u64(c.n_embd) + 2 * u64(c.q_dim()) + 2 * u64(c.kv_dim()) + 2 * u64(c.n_ff);
    m.activation_bytes = u64(n_new) * floats_per_token * kFp32Bytes;
    m.score_bytes = u64(c.n_head) * attention_score_bytes_per_head(n_new, context);
    m.logits_bytes = u64(n_logits) * u64(c.n_vocab) * kFp32Bytes;
    return m;
}

}  // namespace inferscope
