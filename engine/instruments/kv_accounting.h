#pragma once
// KV cache: the formula against the allocator. Bytes per token from the formula
// 2 x layers x kv_heads x head_dim x bytes (the memory budget's, engine/plan), next to the
// bytes the paged pool (KvBlockPool) really has in use after running tokens through the
// model; the rounding of the last block reported separately; the formula's total for
// layouts of users x tokens (the cache depends only on resident tokens); and what the same
// model would need with full multi-head (MHA), grouped (GQA) or multi-query (MQA) attention.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/plan/kv_formula.h"
#include "engine/kv/kv_cache.h"

namespace inferscope {

class InferenceSession;
struct ModelConfig;

struct KvUserLayout {
    int users = 0;
    int tokens_per_user = 0;
};
// "32x2048,64x1024" -> {32, 2048}, {64, 1024}; InvalidArgument naming a malformed entry.
std::vector<KvUserLayout> parse_kv_user_layouts(const std::string& text);

struct KvLayoutRow {
    KvUserLayout layout;
    int64_t resident_tokens = 0;  // users x tokens per user
    double bytes = 0;             // resident tokens x formula bytes/token
};

std::vector<KvLayoutRow> kv_layout_rows(double bytes_per_token, std::span<const KvUserLayout> layouts);

// One group of the session's KV cache (kv_cache.h) as its block pool accounts for it.
struct KvGroupUsage {
    KvGroup group = KvGroup::Global;
    int layers = 0;
    int window_tokens = 0;        // > 0: its blocks before the window are recycled
    uint64_t bytes_per_token = 0;  // K and V of one token in the group's layers
    int pool_blocks = 0;
    uint64_t pool_bytes = 0;       // what the backend allocated for the group
    int blocks_used = 0;
    uint64_t bytes_in_use = 0;
    uint64_t bytes_reserved = 0;
};
std::vector<KvGroupUsage> kv_group_usage(const KvCache& cache);

struct KvAccountingReport {
    KvDtype dtype = KvDtype::F16;
    int n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0;
    double formula_bytes_per_token = 0;
    int tokens = 0;                      // tokens really run through the model
    double formula_bytes = 0;            // tokens x formula bytes/token
    uint64_t layer_tensor_bytes = 0;     // one layer's K (or V) tensor: kv_heads x tokens x head_dim x bytes
    uint64_t allocator_bytes_in_use = 0;    // bytes in use the run added, both pools (pool_groups)
    uint64_t allocator_bytes_reserved = 0;  // bytes reserved the run added (whole blocks)
    uint64_t block_rounding_waste_bytes = 0;  // reserved - in use: the last block's empty slots
    int block_tokens = 0;
    int blocks_used = 0;
    std::vector<KvLayoutRow> layouts;
    std::vector<KvAttentionWhatIf> what_if;
    KvWindowSplit window;  // at `tokens`; window.local_layers == 0 for models without local layers
    // Per group, the pool's figures with the run's sequence still held (in use, reserved and
    // blocks: what the run added).
    std::vector<KvGroupUsage> pool_groups;
};

// Runs `tokens` tokens (deterministic ids) through the model in a fresh sequence of the
// session, reads the pool's accounting, then frees the sequence. CapacityError when the
// tokens exceed the session's context; InvalidArgument when tokens < 1.
KvAccountingReport measure_kv_accounting(InferenceSession& session, int tokens, std::span<const KvUserLayout> layouts);

}  // namespace inferscope
