#include "engine/backend/cpu/kv_storage.h"

#include <cstring>
#include <new>
#include <string>

#include "engine/core/error.h"
#include "engine/core/fp16.h"

namespace inferscope {

CpuKvStorage::CpuKvStorage(const KvLayout& layout) : layout_(layout) {
    slot_bytes_ = static_cast<uint64_t>(layout.n_head_kv) * static_cast<uint64_t>(layout.head_dim) *
                  static_cast<uint64_t>(kv_dtype_bytes(layout.dtype));
    const uint64_t layer_bytes = slot_bytes_ * static_cast<uint64_t>(layout.n_blocks) *
                                 static_cast<uint64_t>(layout.block_tokens);
    try {
        for (int l = 0; l < layout.n_layer; ++l) {
            // Uninitialised on purpose: the OS maps pages lazily, so an unused pool costs no
            // resident memory; every slot is written before it is read.
            k_.emplace_back(new uint8_t[layer_bytes]);
            v_.emplace_back(new uint8_t[layer_bytes]);
        }
    } catch (const std::bad_alloc&) {
        k_.clear();
        v_.clear();
        throw CapacityError("cannot allocate the KV cache: " + std::to_string(layout.pool_bytes()) + " bytes (" +
                            std::to_string(layout.n_blocks) + " blocks of " + std::to_string(layout.block_tokens) +
                            " tokens); lower the context size (-c)");
    }
}

void CpuKvStorage::write(int layer, int64_t slot, const float* k, const float* v) {
    const int64_t n = static_cast<int64_t>(layout_.n_head_kv) * layout_.head_dim;
    uint8_t* k_dst = k_[static_cast<size_t>(layer)].get() + static_cast<uint64_t>(slot) * slot_bytes_;
    uint8_t* v_dst = v_[static_cast<size_t>(layer)].get() + static_cast<uint64_t>(slot) * slot_bytes_;
    if (layout_.dtype == KvDtype::F32) {
        std::memcpy(k_dst, k, slot_bytes_);
        std::memcpy(v_dst, v, slot_bytes_);
        return;
    }
    auto* k16 = reinterpret_cast<uint16_t*>(k_dst);
    auto* v16 = reinterpret_cast<uint16_t*>(v_dst);
    for (int64_t i = 0; i < n; ++i) {
        k16[i] = fp32_to_fp16(k[i]);
        v16[i] = fp32_to_fp16(v[i]);
    }
}

}  // namespace inferscope
