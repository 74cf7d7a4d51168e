#pragma once
// Bookkeeping of the paged KV cache (PagedAttention): a pool of fixed-size blocks and, per
// sequence, a block table mapping logical token positions to physical blocks. Storage for the
// blocks belongs to the backend (host memory for the CPU, device memory for a GPU); this
// class decides which block holds which tokens and accounts for the bytes.
//
// Blocks are shared in two ways, both reference counted:
//  - Prefix caching: a full block is identified by a hash of its parent block's hash and its
//    own token ids, so sequences whose prompts start alike reuse the same blocks. A freed
//    block keeps its contents and stays findable until it is needed for something else; the
//    free blocks form a queue and the least recently freed is reused (evicted) first.
//  - Forking: a child sequence starts with all of its parent's blocks. Writing into a block
//    that another sequence also uses first copies it (copy on write).
//
// A pool may serve sliding-window layers (layout.window_tokens > 0): a query at position p
// reads only positions p - window + 1 .. p, so once a sequence has moved on, its blocks
// wholly before the window are released (their table entries become kReleasedBlock) and
// recycled like a freed sequence's, cached contents included.
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

using SeqId = int32_t;
using BlockHash = uint64_t;

enum class KvDtype { F16, F32 };
const char* kv_dtype_name(KvDtype dtype);
int kv_dtype_bytes(KvDtype dtype);

struct KvLayout {
    int n_layer = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    KvDtype dtype = KvDtype::F16;
    int block_tokens = 16;
    int n_blocks = 0;
    int window_tokens = 0;  // > 0: the layers attend to this many positions at most

    uint64_t bytes_per_token() const {
        return uint64_t{2} * static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(n_head_kv) *
               static_cast<uint64_t>(head_dim) * static_cast<uint64_t>(kv_dtype_bytes(dtype));
    }
    uint64_t block_bytes() const { return bytes_per_token() * static_cast<uint64_t>(block_tokens); }
    uint64_t pool_bytes() const { return block_bytes() * static_cast<uint64_t>(n_blocks); }
};

// The most blocks one sequence of a sliding-window pool holds while a batch of
// `batch_tokens` of its tokens is computed: the window, the one block of slack that
// commit() keeps (see there), the batch, and partial blocks at both ends.
int sliding_window_blocks(int window_tokens, int block_tokens, int batch_tokens);

// A block the backend must copy (all layers, K and V) before the next forward pass writes
// into `dst`.
struct BlockCopy {
    int32_t src = 0;
    int32_t dst = 0;
};

class KvBlockPool {
public:
    // The table entry of a block a sliding-window sequence no longer holds.
    static constexpr int32_t kReleasedBlock = -1;

    explicit KvBlockPool(const KvLayout& layout);

    const KvLayout& layout() const { return layout_; }

    // Registers an empty sequence; InvalidArgument if the id is already in use.
    void add_sequence(SeqId seq);
    // Registers `child` as a copy of `parent`: same tokens, same blocks (shared).
    void fork_sequence(SeqId parent, SeqId child);
    bool has_sequence(SeqId seq) const { return sequences_.count(seq) != 0; }
    // Releases the sequence's blocks (cached ones stay findable) and forgets it.
    void free_sequence(SeqId seq);

    // For an empty sequence about to be given `tokens`: attaches the cached blocks that hold
    // the longest run of whole blocks at the start of `tokens`, leaving at least the last
    // token to be computed. Returns how many tokens the sequence now holds. A sliding-window
    // pool needs only the blocks inside the window of the next position to be cached.
    int attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens);

    // Appends tokens to the sequence, taking blocks from the free queue. Returns the block
    // copies the backend must make first (copy on write of a shared last block). All or
    // nothing: CapacityError (naming the shortfall) leaves the pool unchanged.
    std::vector<BlockCopy> append(SeqId seq, std::span<const TokenId> tokens);
    // The CapacityError append() would throw for `n_tokens` more tokens, without changing anything.
    void check_append(SeqId seq, int n_tokens) const;
    // Blocks append() would take from the free queue for `n_tokens` more tokens.
    int blocks_to_append(SeqId seq, int n_tokens) const { return blocks_to_append(sequence(seq), n_tokens); }
    // Registers the sequence's full blocks in the prefix cache. Call once their K/V are
    // written (after the forward pass that computed them succeeded). A sliding-window pool
    // then releases the blocks that lie wholly before the next position's window by more
    // than one block (the slack lets a speculative step be cut back without recomputing).
    void commit(SeqId seq);
    // Shrinks the sequence to its first `n_tokens` tokens, releasing blocks no longer needed.
    // A sliding-window sequence cut back past its slack takes the blocks of the new window
    // back from the prefix cache; CapacityError (sequence unchanged) when one was recycled.
    void truncate(SeqId seq, int n_tokens);

    int sequence_length(SeqId seq) const;
    std::span<const int32_t> block_table(SeqId seq) const;
    std::span<const TokenId> sequence_tokens(SeqId seq) const;
    std::vector<SeqId> sequence_ids() const;

    int free_block_count() const { return free_count_; }
    int used_block_count() const { return layout_.n_blocks - free_count_; }
    int cached_block_count() const { return static_cast<int>(cache_.size()); }
    int ref_count(int32_t block) const { return blocks_.at(static_cast<size_t>(block)).ref_count; }
    std::optional<BlockHash> block_hash(int32_t block) const;
    // Free blocks in the order they will be handed out (the first is evicted first).
    std::vector<int32_t> free_queue() const;

    // Sum of the sequences' held tokens (a shared token counts once per sequence; a
    // sliding-window sequence's released blocks hold none).
    int64_t tokens_in_use() const;
    // Bytes of K and V actually stored: the filled slots of every block in use, a shared
    // block counted once.
    uint64_t bytes_in_use() const;
    // Bytes of the blocks in use (blocks x block bytes); the difference to bytes_in_use is
    // the unfilled tail of each sequence's last block.
    uint64_t bytes_reserved() const { return static_cast<uint64_t>(used_block_count()) * layout_.block_bytes(); }
    // Bytes sharing saves: what the sequences' tokens would occupy with private copies
    // (tokens_in_use x bytes per token) minus bytes_in_use.
    uint64_t bytes_shared() const;
    // What reserving `context_tokens` for every resident sequence would cost (the
    // allocation paging avoids).
    uint64_t bytes_if_reserved_per_sequence(int context_tokens) const;

private:
    static constexpr int32_t kNone = -1;

    struct Block {
        int ref_count = 0;
        int filled = 0;                  // slots holding K/V
        std::optional<BlockHash> hash;   // set while registered in the prefix cache
        std::vector<TokenId> tokens;     // the block's tokens while registered (checked on a hit)
        int32_t prev = kNone;            // free-queue links
        int32_t next = kNone;
    };
    struct Sequence {
        std::vector<TokenId> tokens;
        std::vector<int32_t> blocks;
        size_t committed_blocks = 0;  // leading full blocks registered (or attached from) the cache
    };

    Sequence& sequence(SeqId seq);
    const Sequence& sequence(SeqId seq) const;
    BlockHash hash_block(BlockHash parent, std::span<const TokenId> tokens) const;
    std::optional<int32_t> lookup(BlockHash hash, std::span<const TokenId> tokens) const;
    std::vector<BlockHash> block_hashes(std::span<const TokenId> tokens, size_t n_blocks) const;
    int first_window_block(int next_position, int slack_tokens) const;
    bool next_write_is_shared(const Sequence& s) const;
    int blocks_to_append(const Sequence& s, int n_tokens) const;
    void take_cached(int32_t block);
    void release_outside_window(Sequence& s);
    std::vector<std::pair<size_t, int32_t>> window_to_regain(const Sequence& s, SeqId seq, int n_tokens) const;
    int attach_window(Sequence& s, std::span<const TokenId> tokens);
    int32_t allocate_block();
    void release_block(int32_t block);
    void uncache(int32_t block);
    void queue_push_back(int32_t block);
    void queue_remove(int32_t block);
    int blocks_needed(int n_tokens) const { return (n_tokens + layout_.block_tokens - 1) / layout_.block_tokens; }

    KvLayout layout_;
    std::vector<Block> blocks_;
    int32_t queue_head_ = kNone;
    int32_t queue_tail_ = kNone;
    int free_count_ = 0;
    std::unordered_map<BlockHash, int32_t> cache_;
    std::map<SeqId, Sequence> sequences_;
};

}  // namespace inferscope
