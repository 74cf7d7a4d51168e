#pragma once
// Host memory for the paged KV cache, per layer, KV head and block, in the layout's dtype:
//   K: [head_dim][block_tokens] per head and block (transposed: one dimension of
//      consecutive tokens is contiguous, so attention scores 16 tokens with one vector load
//      per dimension)
//   V: [block_tokens][head_dim] per head and block
// Each layer holds the K parts of all blocks of KV head 0, then of head 1, ..., then the V
// parts in the same order: the thread that attends for one KV head reads its part of
// consecutive blocks as one run of memory, and touches half the pages it would if the heads
// of a block lay together (at depth 2048 that would be a 4 KiB page, and a page walk, every 2 KiB).
// All layers lie in one buffer advised as 2 MiB pages (HugePageBuffer): at depth 2048 a
// head's run (256 KiB for a 0.5B model) then lies in one or two pages instead of 64, which
// spares the page walks and lets the hardware prefetchers run on across what were page ends.
// Pages are still touched lazily, 2 MiB at a time, so resident memory stays within the
// pool's size (llama.cpp clears its whole cache when it allocates it).
#include <cstdint>

#include "engine/core/huge_page_buffer.h"
#include "engine/kv/kv_block_pool.h"

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
    // The same for one KV head: k and v point at that head's head_dim floats.
    void write_head(int layer, int32_t block, int offset, int head, const float* k, const float* v);
    // Copies block `src` to block `dst` in every layer, K and V.
    void copy_block(int32_t src, int32_t dst);
    // One KV head's part of a block of K or V in the layouts above (F16 bits or F32, as the
    // layout says).
    const void* k_part(int layer, int32_t block, int head) const { return part(Side::keys, layer, block, head); }
    const void* v_part(int layer, int32_t block, int head) const { return part(Side::values, layer, block, head); }

private:
    enum class Side { keys, values };
    uint8_t* part(Side side, int layer, int32_t block, int head) const {
        const auto heads = static_cast<uint64_t>(layout_.n_head_kv);
        const uint64_t run = static_cast<uint64_t>(layer) * 2 * heads + (side == Side::values ? heads : 0) + static_cast<uint64_t>(head);
        return memory_.data() + run * head_run_bytes_ + static_cast<uint64_t>(block) * part_bytes_;
    }

    KvLayout layout_;
    uint64_t part_bytes_ = 0;      // one KV head's part of one block
    uint64_t head_run_bytes_ = 0;  // one KV head's parts of all blocks
    HugePageBuffer memory_;
};

}  // namespace inferscope
