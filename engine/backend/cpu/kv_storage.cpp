#include "engine/backend/cpu/kv_storage.h"

#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/core/fp16.h"

namespace inferscope {

CpuKvStorage::CpuKvStorage(const KvLayout& layout) : layout_(layout) {
    part_bytes_ = static_cast<uint64_t>(layout.head_dim) * static_cast<uint64_t>(layout.block_tokens) *
                  static_cast<uint64_t>(kv_dtype_bytes(layout.dtype));
    head_run_bytes_ = part_bytes_ * static_cast<uint64_t>(layout.n_blocks);
    const uint64_t bytes = head_run_bytes_ * 2 * static_cast<uint64_t>(layout.n_head_kv) * static_cast<uint64_t>(layout.n_layer);
    try {
        // Uninitialised on purpose: the OS maps pages as they are first written, so an unused
        // pool costs no resident memory; every slot is written before it is read.
        memory_ = HugePageBuffer(bytes);
    } catch (const CapacityError&) {
        throw CapacityError("cannot allocate the KV cache: " + std::to_string(layout.pool_bytes()) + " bytes (" +
                            std::to_string(layout.n_blocks) + " blocks of " + std::to_string(layout.block_tokens) +
                            " tokens); lower the context size (-c)");
    }
}

namespace {
template <typename T>
T convert(float x) {
    if constexpr (sizeof(T) == 2) {
        return fp32_to_fp16(x);
    } else {
        return x;
    }
}

template <typename T>
void store_token(const KvLayout& layout, T* k_part, T* v_part, int offset, const float* k, const float* v) {
    for (int64_t d = 0; d < layout.head_dim; ++d) k_part[d * layout.block_tokens + offset] = convert<T>(k[d]);
    T* v_row = v_part + static_cast<int64_t>(offset) * layout.head_dim;
    for (int64_t d = 0; d < layout.head_dim; ++d) v_row[d] = convert<T>(v[d]);
}
}  // namespace

void CpuKvStorage::write(int layer, int32_t block, int offset, const float* k, const float* v) {
    for (int head = 0; head < layout_.n_head_kv; ++head) {
        const int64_t first = static_cast<int64_t>(head) * layout_.head_dim;  // of this head in k and v
        write_head(layer, block, offset, head, k + first, v + first);
    }
}

void CpuKvStorage::write_head(int layer, int32_t block, int offset, int head, const float* k, const float* v) {
    uint8_t* k_dst = part(Side::keys, layer, block, head);
    uint8_t* v_dst = part(Side::values, layer, block, head);
    if (layout_.dtype == KvDtype::F32) {
        store_token(layout_, reinterpret_cast<float*>(k_dst), reinterpret_cast<float*>(v_dst), offset, k, v);
    } else {
        store_token(layout_, reinterpret_cast<uint16_t*>(k_dst), reinterpret_cast<uint16_t*>(v_dst), offset, k, v);
    }
}

void CpuKvStorage::copy_block(int32_t src, int32_t dst) {
    for (int layer = 0; layer < layout_.n_layer; ++layer) {
        for (int head = 0; head < layout_.n_head_kv; ++head) {
            std::memcpy(part(Side::keys, layer, dst, head), part(Side::keys, layer, src, head), part_bytes_);
            std::memcpy(part(Side::values, layer, dst, head), part(Side::values, layer, src, head), part_bytes_);
        }
    }
}

}  // namespace inferscope
