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
void store_token(const KvLayout& layout, void* k_block, void* v_block, int offset, const float* k, const float* v) {
    const int64_t kv_dim = static_cast<int64_t>(layout.n_head_kv) * layout.head_dim;
    auto* kt = static_cast<T*>(k_block);
    for (int64_t i = 0; i < kv_dim; ++i) kt[i * layout.block_tokens + offset] = convert<T>(k[i]);  // i = head * head_dim + d
    auto* vb = static_cast<T*>(v_block);
    const int64_t head_values = static_cast<int64_t>(layout.block_tokens) * layout.head_dim;
    for (int64_t h = 0; h < layout.n_head_kv; ++h) {
        T* v_row = vb + h * head_values + static_cast<int64_t>(offset) * layout.head_dim;
        for (int64_t d = 0; d < layout.head_dim; ++d) v_row[d] = convert<T>(v[h * layout.head_dim + d]);
    }
}
}  // namespace

void CpuKvStorage::write(int layer, int32_t block, int offset, const float* k, const float* v) {
    void* k_dst = const_cast<void*>(k_block(layer, block));
    void* v_dst = const_cast<void*>(v_block(layer, block));
    if (layout_.dtype == KvDtype::F32) {
        store_token<float>(layout_, k_dst, v_dst, offset, k, v);
    } else {
        store_token<uint16_t>(layout_, k_dst, v_dst, offset, k, v);
    }
}

void CpuKvStorage::copy_block(int32_t src, int32_t dst) {
    const uint64_t block_bytes = slot_bytes_ * static_cast<uint64_t>(layout_.block_tokens);
    for (int layer = 0; layer < layout_.n_layer; ++layer) {
        std::memcpy(const_cast<void*>(k_block(layer, dst)), k_block(layer, src), block_bytes);
        std::memcpy(const_cast<void*>(v_block(layer, dst)), v_block(layer, src), block_bytes);
    }
}

}  // namespace inferscope
