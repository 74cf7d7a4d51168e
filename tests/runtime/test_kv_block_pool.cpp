// Block pool bookkeeping with tiny configurations and exact block ids.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/runtime/kv_block_pool.h"

namespace inferscope {
namespace {

KvLayout tiny_layout(int n_blocks, int block_tokens = 4) {
    KvLayout l;
    l.n_layer = 2;
    l.n_head_kv = 2;
    l.head_dim = 8;
    l.dtype = KvDtype::F16;
    l.block_tokens = block_tokens;
    l.n_blocks = n_blocks;
    return l;
}

std::vector<int32_t> table(const KvBlockPool& pool, SeqId seq) {
    const auto t = pool.block_table(seq);
    return {t.begin(), t.end()};
}

TEST(KvBlockPool, LayoutBytesFollowTheFormula) {
    const KvLayout l = tiny_layout(5);
    EXPECT_EQ(l.bytes_per_token(), 2u * 2 * 2 * 8 * 2);  // K and V x layers x kv heads x head dim x f16
    EXPECT_EQ(l.block_bytes(), l.bytes_per_token() * 4);
    EXPECT_EQ(l.pool_bytes(), l.block_bytes() * 5);
    KvLayout qwen;  // Qwen2.5-0.5B: 24 layers, 2 KV heads, head dim 64, f16
    qwen.n_layer = 24;
    qwen.n_head_kv = 2;
    qwen.head_dim = 64;
    EXPECT_EQ(qwen.bytes_per_token(), 12288u);
    EXPECT_EQ(qwen.bytes_per_token() * 295, 3624960u);
}

TEST(KvBlockPool, FreshPoolHandsOutBlocksInOrder) {
    KvBlockPool pool(tiny_layout(6));
    pool.add_sequence(0);
    pool.add_sequence(1);
    pool.grow(0, 5);  // 2 blocks
    pool.grow(1, 4);  // 1 block
    pool.grow(0, 9);  // 3rd block
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 3}));
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{2}));
    EXPECT_EQ(pool.used_block_count(), 4);
    EXPECT_EQ(pool.free_block_count(), 2);
    EXPECT_EQ(pool.tokens_in_use(), 13);
    EXPECT_EQ(pool.bytes_in_use(), 13 * pool.layout().bytes_per_token());
    EXPECT_EQ(pool.bytes_reserved(), 4 * pool.layout().block_bytes());
}

TEST(KvBlockPool, FreedBlocksAreReusedMostRecentFirst) {
    KvBlockPool pool(tiny_layout(4));
    pool.add_sequence(7);
    pool.grow(7, 12);  // blocks 0 1 2
    pool.free_sequence(7);
    EXPECT_FALSE(pool.has_sequence(7));
    EXPECT_EQ(pool.free_block_count(), 4);
    pool.add_sequence(8);
    pool.grow(8, 8);
    // 2 was freed last, then 1
    EXPECT_EQ(table(pool, 8), (std::vector<int32_t>{0, 1}));
}

TEST(KvBlockPool, TruncateReturnsWholeBlocksOnly) {
    KvBlockPool pool(tiny_layout(4));
    pool.add_sequence(0);
    pool.grow(0, 10);  // 0 1 2
    pool.truncate(0, 5);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.sequence_length(0), 5);
    pool.truncate(0, 8);  // longer than the sequence: no-op
    EXPECT_EQ(pool.sequence_length(0), 5);
    pool.grow(0, 6);  // fits in block 1
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1}));
    pool.grow(0, 9);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 2}));
}

TEST(KvBlockPool, ExhaustionIsAllOrNothingWithAClearError) {
    KvBlockPool pool(tiny_layout(3));
    pool.add_sequence(0);
    pool.grow(0, 8);
    try {
        pool.grow(0, 17);  // needs 3 more blocks, 1 free
        FAIL();
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("needs 3 more blocks"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("only 1 of 3"), std::string::npos) << e.what();
    }
    EXPECT_EQ(pool.sequence_length(0), 8);
    EXPECT_EQ(pool.used_block_count(), 2);
}

TEST(KvBlockPool, UnknownOrDuplicateSequencesAreErrors) {
    KvBlockPool pool(tiny_layout(2));
    pool.add_sequence(3);
    EXPECT_THROW(pool.add_sequence(3), InvalidArgument);
    EXPECT_THROW(pool.grow(4, 1), InvalidArgument);
    EXPECT_THROW((void)pool.block_table(4), InvalidArgument);
    EXPECT_THROW(pool.truncate(3, -1), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
