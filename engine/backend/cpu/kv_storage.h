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
    // Reads one KV head of one slot into `out` (head_dim floats).
    void read_k(int layer, int64_t slot, int kv_head, float* out) const;
    void read_v(int layer, int64_t slot, int kv_head, float* out) const;

private:
    void read(const std::unique_ptr<uint8_t[]>& base, int64_t slot, int kv_head, float* out) const;

    KvLayout layout_;
    uint64_t slot_bytes_ = 0;                   // one token, all KV heads
    std::vector<std::unique_ptr<uint8_t[]>> k_;  // per layer
    std::vector<std::unique_ptr<uint8_t[]>> v_;
};

}  // namespace inferscope
