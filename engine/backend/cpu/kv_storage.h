#pragma once
// Host memory for the paged KV cache, per layer and block in the layout's dtype:
//   K: [n_head_kv][head_dim][block_tokens]  (transposed: one dimension of consecutive tokens
//      is contiguous, so attention scores 16 tokens with one vector load per dimension)
//   V: [n_head_kv][block_tokens][head_dim]  (one head's values for the block are contiguous:
//      the attention of one KV head reads one run of memory per block, as for K)
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
    // One block of K or V in the layouts above (F16 bits or F32, as the layout says).
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
