// The CPU backend's KV memory: every (layer, KV head, block) part has its own bytes, in the
// transposed K and row-major V layouts the attention kernels read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/backend/cpu/kv_storage.h"
#include "engine/core/error.h"
#include "engine/core/fp16.h"

namespace inferscope {
namespace {

KvLayout small_layout(KvDtype dtype) {
    KvLayout l;
    l.n_layer = 3;
    l.n_head_kv = 2;
    l.head_dim = 4;
    l.dtype = dtype;
    l.block_tokens = 2;
    l.n_blocks = 5;
    return l;
}

// A value that names its layer, K or V, head, block, slot and dimension: a distinct whole
// number below 2048 for the small layout, so F16 holds it exactly.
float tag(const KvLayout& l, int layer, bool value, int head, int block, int offset, int d) {
    const int side = value ? 1 : 0;
    return static_cast<float>(((((layer * 2 + side) * l.n_head_kv + head) * l.n_blocks + block) * l.block_tokens + offset) *
                                  l.head_dim +
                              d);
}

// Writes every slot of every block in every layer, each token's K and V holding its tags.
void fill(CpuKvStorage& kv, const KvLayout& l) {
    const int kv_dim = l.n_head_kv * l.head_dim;
    std::vector<float> k(static_cast<size_t>(kv_dim)), v(k.size());
    for (int layer = 0; layer < l.n_layer; ++layer) {
        for (int block = 0; block < l.n_blocks; ++block) {
            for (int offset = 0; offset < l.block_tokens; ++offset) {
                for (int head = 0; head < l.n_head_kv; ++head) {
                    for (int d = 0; d < l.head_dim; ++d) {
                        k[static_cast<size_t>(head * l.head_dim + d)] = tag(l, layer, false, head, block, offset, d);
                        v[static_cast<size_t>(head * l.head_dim + d)] = tag(l, layer, true, head, block, offset, d);
                    }
                }
                kv.write(layer, block, offset, k.data(), v.data());
            }
        }
    }
}

// K part element (d, offset) and V part element (offset, d), widened to F32.
float read(const void* part, KvDtype dtype, int64_t index) {
    if (dtype == KvDtype::F32) return static_cast<const float*>(part)[index];
    return fp16_to_fp32(static_cast<const uint16_t*>(part)[index]);
}

// Block `block` of every layer and head holds the tags written for block `written_as`.
void expect_block(const CpuKvStorage& kv, const KvLayout& l, int block, int written_as) {
    for (int layer = 0; layer < l.n_layer; ++layer) {
        for (int head = 0; head < l.n_head_kv; ++head) {
            const void* k = kv.k_part(layer, block, head);
            const void* v = kv.v_part(layer, block, head);
            for (int offset = 0; offset < l.block_tokens; ++offset) {
                for (int d = 0; d < l.head_dim; ++d) {
                    EXPECT_EQ(read(k, l.dtype, d * l.block_tokens + offset), tag(l, layer, false, head, written_as, offset, d))
                        << "K layer " << layer << " head " << head << " block " << block << " slot " << offset << " dim " << d;
                    EXPECT_EQ(read(v, l.dtype, offset * l.head_dim + d), tag(l, layer, true, head, written_as, offset, d))
                        << "V layer " << layer << " head " << head << " block " << block << " slot " << offset << " dim " << d;
                }
            }
        }
    }
}

TEST(CpuKvStorage, EveryLayerHeadAndBlockKeepsItsOwnKeysAndValues) {
    for (KvDtype dtype : {KvDtype::F16, KvDtype::F32}) {
        const KvLayout l = small_layout(dtype);
        CpuKvStorage kv(l);
        fill(kv, l);
        for (int block = 0; block < l.n_blocks; ++block) expect_block(kv, l, block, block);
    }
}

TEST(CpuKvStorage, HeadsOfConsecutiveBlocksFormOneRun) {
    const KvLayout l = small_layout(KvDtype::F16);
    CpuKvStorage kv(l);
    const auto part_bytes = static_cast<std::ptrdiff_t>(l.head_dim * l.block_tokens * 2);
    for (int layer = 0; layer < l.n_layer; ++layer) {
        for (int head = 0; head < l.n_head_kv; ++head) {
            const auto* k0 = static_cast<const uint8_t*>(kv.k_part(layer, 0, head));
            const auto* v0 = static_cast<const uint8_t*>(kv.v_part(layer, 0, head));
            for (int block = 1; block < l.n_blocks; ++block) {
                EXPECT_EQ(static_cast<const uint8_t*>(kv.k_part(layer, block, head)) - k0, block * part_bytes);
                EXPECT_EQ(static_cast<const uint8_t*>(kv.v_part(layer, block, head)) - v0, block * part_bytes);
            }
        }
    }
}

TEST(CpuKvStorage, CopyBlockCopiesEveryLayerAndLeavesTheOthers) {
    const KvLayout l = small_layout(KvDtype::F16);
    CpuKvStorage kv(l);
    fill(kv, l);
    kv.copy_block(1, 3);
    expect_block(kv, l, 3, 1);
    for (int block : {0, 1, 2, 4}) expect_block(kv, l, block, block);
}

TEST(CpuKvStorage, AnImpossiblePoolIsACapacityErrorNamingItsSize) {
    KvLayout l = small_layout(KvDtype::F32);
    l.n_layer = 1 << 20;
    l.n_blocks = 1 << 22;  // 2^49 bytes: more than a 64-bit process can address
    try {
        CpuKvStorage kv(l);
        FAIL() << "a pool of " << l.pool_bytes() << " bytes was allocated";
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find(std::to_string(l.pool_bytes())), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("KV cache"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace inferscope
