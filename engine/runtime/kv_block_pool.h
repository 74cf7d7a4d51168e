#pragma once
// Bookkeeping of the paged KV cache: a pool of fixed-size blocks and, per sequence, a
// block table mapping logical token positions to physical blocks. Storage for the blocks
// belongs to the backend (host memory for the CPU, device memory for a GPU); this class
// only decides which block holds which tokens and accounts for the bytes.
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace inferscope {

using SeqId = int32_t;

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

    uint64_t bytes_per_token() const {
        return uint64_t{2} * static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(n_head_kv) *
               static_cast<uint64_t>(head_dim) * static_cast<uint64_t>(kv_dtype_bytes(dtype));
    }
    uint64_t block_bytes() const { return bytes_per_token() * static_cast<uint64_t>(block_tokens); }
    uint64_t pool_bytes() const { return block_bytes() * static_cast<uint64_t>(n_blocks); }
};

class KvBlockPool {
public:
    explicit KvBlockPool(const KvLayout& layout);

    const KvLayout& layout() const { return layout_; }

    // Registers an empty sequence; InvalidArgument if the id is already in use.
    void add_sequence(SeqId seq);
    bool has_sequence(SeqId seq) const { return sequences_.count(seq) != 0; }
    // Returns the sequence's blocks to the free list and forgets it.
    void free_sequence(SeqId seq);
    // Grows the sequence to `n_tokens` cached tokens, taking blocks from the free list. All
    // or nothing: CapacityError (naming the shortfall) leaves the pool unchanged.
    void grow(SeqId seq, int n_tokens);
    // Shrinks the sequence to its first `n_tokens` tokens, freeing blocks no longer needed.
    void truncate(SeqId seq, int n_tokens);

    int sequence_length(SeqId seq) const;
    std::span<const int32_t> block_table(SeqId seq) const;
    std::vector<SeqId> sequence_ids() const;

    int free_block_count() const { return static_cast<int>(free_blocks_.size()); }
    int used_block_count() const { return layout_.n_blocks - free_block_count(); }
    int64_t tokens_in_use() const;
    // Exact bytes of K and V the cached tokens occupy (tokens x bytes per token).
    uint64_t bytes_in_use() const { return static_cast<uint64_t>(tokens_in_use()) * layout_.bytes_per_token(); }
    // Bytes of the blocks handed out (blocks x block bytes); the difference to bytes_in_use
    // is the unfilled tail of each sequence's last block.
    uint64_t bytes_reserved() const { return static_cast<uint64_t>(used_block_count()) * layout_.block_bytes(); }

private:
    struct Sequence {
        int n_tokens = 0;
        std::vector<int32_t> blocks;
    };
    Sequence& sequence(SeqId seq);
    const Sequence& sequence(SeqId seq) const;

    KvLayout layout_;
    std::vector<int32_t> free_blocks_;  // a stack: the most recently freed block is reused first
    std::map<SeqId, Sequence> sequences_;
};

}  // namespace inferscope
