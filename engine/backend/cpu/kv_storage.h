#pragma once
// Host memory for the paged KV cache, per layer, KV head and block, in the layout's dtype:
//   K: [head_dim][block_tokens] per head and block (transposed: one dimension of
//      consecutive tokens is contiguous, so attention scores 16 tokens with one vector load
//      per dimension)
//   V: [block_tokens][head_dim] per head and block
// Each layer holds all blocks of KV head 0, then all of head 1, ...: the thread that
// attends for one KV head reads its part of consecutive blocks as one run of memory, and
// touches half the pages it would if the heads of a block lay together (at depth 2048 that
// was a 4 KiB page, and a page walk, every 2 KiB).
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/runtime/kv_block_pool.h"

namespace inferscope {

class CpuKvStorage {
public:
    CpuKvStorage() = default;
    // Reserves the memory (pages are touched only when written). CapacityError naming the
    // byte count when the allocation cannot be met.
    explicit CpuKvStorage(const KvLayout& layout);

    const KvLayout& layout() const { return layout_; }

    // Stores one token's K and V (kv_dim floats each) for `layer` at position `offset` of
    // physical block `block`.
    void write(int layer, int32_t block, int offset, const float* k, const float* v);
    // Copies block `src` to block `dst` in every layer, K and V.
    void copy_block(int32_t src, int32_t dst);
    // One KV head's part of a block of K or V in the layouts above (F16 bits or F32, as the
    // layout says).
    const void* k_part(int layer, int32_t block, int head) const { return part(k_, layer, block, head); }
    const void* v_part(int layer, int32_t block, int head) const { return part(v_, layer, block, head); }

private:
    uint8_t* part(const std::vector<std::unique_ptr<uint8_t[]>>& base, int layer, int32_t block, int head) const {
        return base[static_cast<size_t>(layer)].get() + static_cast<uint64_t>(head) * head_run_bytes_ +
               static_cast<uint64_t>(block) * part_bytes_;
    }

    KvLayout layout_;
    uint64_t part_bytes_ = 0;      // one KV head's part of one block
    uint64_t head_run_bytes_ = 0;  // one KV head's parts of all blocks
    std::vector<std::unique_ptr<uint8_t[]>> k_;  // per layer
    std::vector<std::unique_ptr<uint8_t[]>> v_;
};

}  // namespace inferscope
