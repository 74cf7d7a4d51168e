#pragma once
// Host memory for the paged KV cache. Per layer, K and V each hold
// [n_blocks][block_tokens][n_head_kv][head_dim] elements of the layout's dtype, so one
// token's keys for all KV heads are contiguous.
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

    // Stores one token's K and V (kv_dim floats each) for `layer` in physical `slot`
    // (block * block_tokens + offset).
    void write(int layer, int64_t slot, const float* k, const float* v);
    // The K or V rows of one block: block_tokens rows of n_head_kv x head_dim elements (F16
    // bits or F32, as the layout says); the row of token t, head h starts at element
    // (t * n_head_kv + h) * head_dim.
    const void* k_block(int layer, int32_t block) const { return block_data(k_, layer, block); }
    const void* v_block(int layer, int32_t block) const { return block_data(v_, layer, block); }

private:
    const void* block_data(const std::vector<std::unique_ptr<uint8_t[]>>& base, int layer, int32_t block) const {
        return base[static_cast<size_t>(layer)].get() +
               static_cast<uint64_t>(block) * static_cast<uint64_t>(layout_.block_tokens) * slot_bytes_;
    }

    KvLayout layout_;
    uint64_t slot_bytes_ = 0;                   // one token, all KV heads
    std::vector<std::unique_ptr<uint8_t[]>> k_;  // per layer
    std::vector<std::unique_ptr<uint8_t[]>> v_;
};

}  // namespace inferscope
