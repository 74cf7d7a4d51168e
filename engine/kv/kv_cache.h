#pragma once
// The paged KV cache of a whole model: one block pool per kind of layer. Layers that attend
// to the whole context (global) keep every block of a sequence; sliding-window (local)
// layers, as Gemma 3 interleaves them, keep only the blocks their window still reads and
// recycle the rest (KvBlockPool with window_tokens > 0). Both pools see the same sequences
// and tokens, so a sequence's length, forks and cached prefixes agree between them.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "engine/kv/kv_block_pool.h"

namespace inferscope {

enum class KvGroup { Global, Local };
const char* kv_group_name(KvGroup group);

struct KvCacheLayout {
    KvLayout global;                     // layers attending to the whole context
    KvLayout local;                      // sliding-window layers; n_layer 0 when none are kept apart
    std::vector<KvGroup> layer_group;    // per model layer
    std::vector<int> index_in_group;     // per model layer: its place in its group's storage

    bool has_local() const { return local.n_layer > 0; }
    KvDtype dtype() const { return global.dtype; }
    int block_tokens() const { return global.block_tokens; }
    // K and V of one token in every layer (what a token costs while all its layers hold it).
    uint64_t bytes_per_token() const { return global.bytes_per_token() + local.bytes_per_token(); }
    uint64_t pool_bytes() const { return global.pool_bytes() + local.pool_bytes(); }
};

// Puts `n_layer` layers into the global group, or those `is_local` names into a local one
// with `local_blocks` blocks and the window; `global` is the layout every layer would share.
KvCacheLayout split_kv_layout(const KvLayout& global, const std::vector<bool>& is_local, int window_tokens, int local_blocks);

// Both groups' copies before a forward pass writes into blocks another sequence shares.
struct KvBlockCopies {
    std::vector<BlockCopy> global;
    std::vector<BlockCopy> local;
    bool empty() const { return global.empty() && local.empty(); }
};

class KvCache {
public:
    explicit KvCache(const KvCacheLayout& layout);

    const KvCacheLayout& layout() const { return layout_; }
    const KvBlockPool& global() const { return global_; }
    // nullptr when every layer is global.
    const KvBlockPool* local() const { return local_ ? &*local_ : nullptr; }
    const KvBlockPool& group(KvGroup g) const { return g == KvGroup::Local ? *local_ : global_; }
    const KvBlockPool& pool_for_layer(int layer) const { return group(layout_.layer_group[static_cast<size_t>(layer)]); }

    // The KvBlockPool operations, on both pools (see there).
    void add_sequence(SeqId seq);
    void fork_sequence(SeqId parent, SeqId child);
    bool has_sequence(SeqId seq) const { return global_.has_sequence(seq); }
    void free_sequence(SeqId seq);
    // The longest prefix both pools hold (the local pool only the window of its end).
    int attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens);
    // All or nothing across both pools: CapacityError leaves the cache unchanged.
    KvBlockCopies append(SeqId seq, std::span<const TokenId> tokens);
    // CapacityError when the global pool cannot hold a batch adding these token counts to
    // these sequences. Exact before a batch runs in parts (the global pool releases nothing
    // in between); the local pool, which does, is checked by each part's append.
    void check_batch(const std::map<SeqId, int>& tokens_per_sequence) const;
    void commit(SeqId seq);
    // CapacityError (cache unchanged) when the local pool cannot hold the new window again.
    void truncate(SeqId seq, int n_tokens);

    int sequence_length(SeqId seq) const { return global_.sequence_length(seq); }
    std::span<const TokenId> sequence_tokens(SeqId seq) const { return global_.sequence_tokens(seq); }
    std::vector<SeqId> sequence_ids() const { return global_.sequence_ids(); }
    int64_t tokens_in_use() const { return global_.tokens_in_use(); }

    // Sums over both pools (their blocks differ in bytes; see each pool for its own).
    int used_block_count() const;
    uint64_t bytes_in_use() const;
    uint64_t bytes_reserved() const;
    uint64_t bytes_shared() const;
    uint64_t bytes_if_reserved_per_sequence(int context_tokens) const;

private:
    KvCacheLayout layout_;
    KvBlockPool global_;
    std::optional<KvBlockPool> local_;
};

}  // namespace inferscope
