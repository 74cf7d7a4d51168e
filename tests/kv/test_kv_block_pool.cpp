// Block pool bookkeeping in the style of vLLM's block-pool tests: tiny configurations,
// exact block ids, reference counts, hash chains and eviction order.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "engine/core/error.h"
#include "engine/kv/kv_block_pool.h"
#include "support/engine_helpers.h"

namespace inferscope {
namespace {

using testing::consecutive_tokens;

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
    EXPECT_TRUE(pool.append(0, consecutive_tokens(5)).empty());  // 2 blocks
    pool.append(1, consecutive_tokens(4, 500));                  // 1 block
    pool.append(0, consecutive_tokens(4, 105));                  // a 3rd block
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 3}));
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{2}));
    EXPECT_EQ(pool.used_block_count(), 4);
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{4, 5}));
    EXPECT_EQ(pool.tokens_in_use(), 13);
    EXPECT_EQ(pool.bytes_in_use(), 13 * pool.layout().bytes_per_token());
    EXPECT_EQ(pool.bytes_reserved(), 4 * pool.layout().block_bytes());
    EXPECT_EQ(pool.bytes_shared(), 0u);
    EXPECT_EQ(pool.bytes_if_reserved_per_sequence(64), 2 * 64 * pool.layout().bytes_per_token());
}

TEST(KvBlockPool, FreedBlocksGoToTheBackOfTheQueueTailFirst) {
    KvBlockPool pool(tiny_layout(5));
    pool.add_sequence(7);
    pool.append(7, consecutive_tokens(12));  // blocks 0 1 2
    pool.free_sequence(7);
    EXPECT_FALSE(pool.has_sequence(7));
    // never-used blocks first, then the freed ones with the sequence's last block first
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{3, 4, 2, 1, 0}));
    pool.add_sequence(8);
    pool.append(8, consecutive_tokens(10, 900));
    // the queue's first three (3, 4, 2), placed in ascending order: a sequence's blocks then
    // lie forwards in memory, the direction the attention kernels walk fastest
    EXPECT_EQ(table(pool, 8), (std::vector<int32_t>{2, 3, 4}));
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{1, 0}));
}

TEST(KvBlockPool, CommittedFullBlocksFormAHashChain) {
    KvBlockPool pool(tiny_layout(8));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(10));
    EXPECT_FALSE(pool.block_hash(0).has_value());  // nothing registered before commit
    pool.commit(0);
    ASSERT_TRUE(pool.block_hash(0).has_value());
    ASSERT_TRUE(pool.block_hash(1).has_value());
    EXPECT_FALSE(pool.block_hash(2).has_value());  // partial blocks are never cached
    EXPECT_NE(*pool.block_hash(0), *pool.block_hash(1));
    EXPECT_EQ(pool.cached_block_count(), 2);

    // The same tokens in a different position do not hash alike: the parent is part of the hash.
    pool.add_sequence(1);
    std::vector<TokenId> shifted = consecutive_tokens(4, 104);  // = block 1's tokens, as a first block
    shifted.insert(shifted.end(), {1, 2, 3});
    pool.append(1, shifted);
    pool.commit(1);
    EXPECT_NE(*pool.block_hash(table(pool, 1)[0]), *pool.block_hash(1));
}

TEST(KvBlockPool, PrefixHitsShareBlocksAndLeaveOneTokenToCompute) {
    KvBlockPool pool(tiny_layout(8));
    pool.add_sequence(0);
    const std::vector<TokenId> prompt = consecutive_tokens(9);  // 2 full blocks + 1
    pool.append(0, prompt);
    pool.commit(0);

    pool.add_sequence(1);
    EXPECT_EQ(pool.attach_cached_prefix(1, prompt), 8);
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.ref_count(0), 2);
    EXPECT_EQ(pool.ref_count(1), 2);
    EXPECT_EQ(pool.bytes_shared(), 8 * pool.layout().bytes_per_token());

    // A prompt of exactly two blocks reuses only the first: its last token must be computed.
    pool.add_sequence(2);
    EXPECT_EQ(pool.attach_cached_prefix(2, consecutive_tokens(8)), 4);
    EXPECT_EQ(table(pool, 2), (std::vector<int32_t>{0}));
    EXPECT_EQ(pool.ref_count(0), 3);

    // A different first block misses entirely.
    pool.add_sequence(3);
    EXPECT_EQ(pool.attach_cached_prefix(3, consecutive_tokens(9, 50)), 0);
    EXPECT_THROW(pool.attach_cached_prefix(1, prompt), InvalidArgument);  // not empty
}

TEST(KvBlockPool, FreedCachedBlocksStayFindableUntilEvicted) {
    KvBlockPool pool(tiny_layout(4));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(8));  // blocks 0 1, both full
    pool.commit(0);
    pool.free_sequence(0);
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{2, 3, 1, 0}));
    EXPECT_EQ(pool.cached_block_count(), 2);

    // A hit on a free block takes it out of the queue.
    pool.add_sequence(1);
    EXPECT_EQ(pool.attach_cached_prefix(1, consecutive_tokens(9)), 8);
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{2, 3}));
    pool.free_sequence(1);
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{2, 3, 1, 0}));

    // Other work takes blocks from the front: 2 and 3 first, then block 1 is evicted.
    pool.add_sequence(2);
    pool.append(2, consecutive_tokens(12, 700));
    EXPECT_EQ(table(pool, 2), (std::vector<int32_t>{1, 2, 3}));  // 2, 3, 1 from the queue, ascending
    EXPECT_FALSE(pool.block_hash(1).has_value());
    EXPECT_TRUE(pool.block_hash(0).has_value());
    EXPECT_EQ(pool.cached_block_count(), 1);
    pool.add_sequence(3);
    EXPECT_EQ(pool.attach_cached_prefix(3, consecutive_tokens(9)), 4);  // block 0 survived, block 1 did not
}

TEST(KvBlockPool, WritingIntoASharedPartialBlockCopiesIt) {
    KvBlockPool pool(tiny_layout(6));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(6));  // block 0 full, block 1 holds 2 tokens
    pool.fork_sequence(0, 1);
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.ref_count(1), 2);
    EXPECT_EQ(pool.bytes_in_use(), 6 * pool.layout().bytes_per_token());
    EXPECT_EQ(pool.bytes_shared(), 6 * pool.layout().bytes_per_token());

    const std::vector<BlockCopy> copies = pool.append(1, std::vector<TokenId>{42});
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0].src, 1);
    EXPECT_EQ(copies[0].dst, 2);
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{0, 2}));
    EXPECT_EQ(pool.ref_count(1), 1);
    EXPECT_EQ(pool.ref_count(2), 1);
    EXPECT_EQ(pool.ref_count(0), 2);  // the full block stays shared
    // the parent appends into its own (now private) block without a copy
    EXPECT_TRUE(pool.append(0, std::vector<TokenId>{43}).empty());
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1}));
}

TEST(KvBlockPool, TruncateReleasesWholeBlocksAndUncachesAPartialOne) {
    KvBlockPool pool(tiny_layout(4));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(10));  // 0 1 2
    pool.commit(0);
    pool.truncate(0, 5);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.sequence_length(0), 5);
    EXPECT_FALSE(pool.block_hash(1).has_value());  // no longer whole for this sequence
    EXPECT_TRUE(pool.block_hash(0).has_value());
    EXPECT_EQ(pool.bytes_in_use(), 5 * pool.layout().bytes_per_token());
    pool.truncate(0, 8);  // longer than the sequence: no-op
    EXPECT_EQ(pool.sequence_length(0), 5);
    pool.append(0, consecutive_tokens(4, 300));
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 3}));
}

// Speculative decoding's verify pass appends the last token and the draft's proposals, then
// truncates the rejected ones: their partial block goes back to the free queue, and a block
// that was whole only with rejected tokens leaves the prefix cache, so that a later prompt
// with the rejected tokens cannot hit it.
TEST(KvBlockPool, TruncatingRejectedDraftTokensForgetsTheirCachedBlock) {
    KvBlockPool pool(tiny_layout(6));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(6));       // 100..105: blocks 0, 1
    pool.append(0, consecutive_tokens(5, 200));  // verify pass: 200..204 into blocks 1, 2
    pool.commit(0);                         // blocks 0 and 1 are whole: cached
    ASSERT_TRUE(pool.block_hash(1).has_value());
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{3, 4, 5}));

    pool.truncate(0, 7);  // one proposal (200) accepted
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{3, 4, 5, 2}));
    EXPECT_TRUE(pool.block_hash(0).has_value());
    EXPECT_FALSE(pool.block_hash(1).has_value());
    EXPECT_EQ(pool.cached_block_count(), 1);
    EXPECT_EQ(pool.bytes_in_use(), 7 * pool.layout().bytes_per_token());

    // The next verify pass writes over the rejected slots of block 1 in place (no copy).
    EXPECT_TRUE(pool.append(0, consecutive_tokens(5, 300)).empty());
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 3}));
    pool.commit(0);

    std::vector<TokenId> rejected = consecutive_tokens(6);
    for (TokenId t : {200, 201, 202}) rejected.push_back(t);
    pool.add_sequence(1);
    EXPECT_EQ(pool.attach_cached_prefix(1, rejected), 4);  // block 0 only
    std::vector<TokenId> kept = consecutive_tokens(6);
    for (TokenId t : {200, 300, 301, 302, 303, 304, 999}) kept.push_back(t);
    pool.add_sequence(2);
    EXPECT_EQ(pool.attach_cached_prefix(2, kept), 12);
    EXPECT_EQ(table(pool, 2), (std::vector<int32_t>{0, 1, 3}));
}

TEST(KvBlockPool, ExhaustionIsAllOrNothingWithAClearError) {
    KvBlockPool pool(tiny_layout(3));
    pool.add_sequence(0);
    pool.append(0, consecutive_tokens(8));
    try {
        pool.append(0, consecutive_tokens(9, 200));  // needs 3 more blocks, 1 free
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
    EXPECT_THROW(pool.append(4, consecutive_tokens(1)), InvalidArgument);
    EXPECT_THROW((void)pool.block_table(4), InvalidArgument);
    EXPECT_THROW(pool.truncate(3, -1), InvalidArgument);
    EXPECT_THROW(pool.fork_sequence(3, 3), InvalidArgument);
}

// Sliding-window pools: 4-token blocks and a 6-token window, so a query at position p reads
// p - 5 .. p, and commit() keeps one block more than that.
KvBlockPool window_pool(int n_blocks) {
    KvLayout l = tiny_layout(n_blocks);
    l.window_tokens = 6;
    return KvBlockPool(l);
}

constexpr int32_t kReleased = KvBlockPool::kReleasedBlock;

// Appends `count` tokens of the sequence 100, 101, ... and commits them, as a forward pass would.
void grow(KvBlockPool& pool, SeqId seq, int count) {
    pool.append(seq, consecutive_tokens(count, 100 + pool.sequence_length(seq)));
    pool.commit(seq);
}

TEST(KvBlockPoolWindow, CommitReleasesTheBlocksBehindTheWindowAndItsSlack) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    grow(pool, 0, 12);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 2}));  // position 12 reads 7..12; the slack keeps 3..6
    pool.append(0, consecutive_tokens(4, 112));
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{0, 1, 2, 3}));  // nothing goes before the pass has run
    pool.commit(0);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{kReleased, 1, 2, 3}));
    EXPECT_EQ(pool.ref_count(0), 0);
    EXPECT_TRUE(pool.block_hash(0).has_value());  // still findable until reused
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{4, 5, 6, 7, 0}));
    EXPECT_EQ(pool.tokens_in_use(), 12);
    EXPECT_EQ(pool.bytes_in_use(), 12 * pool.layout().bytes_per_token());
    grow(pool, 0, 4);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{kReleased, kReleased, 2, 3, 4}));
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{5, 6, 7, 0, 1}));
    EXPECT_EQ(pool.sequence_length(0), 20);
}

TEST(KvBlockPoolWindow, EveryPassFindsItsWindowAndTheBlockCountStaysBounded) {
    KvBlockPool pool = window_pool(6);
    pool.add_sequence(0);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> chunk(1, 8);
    while (pool.sequence_length(0) < 300) {
        const int first = pool.sequence_length(0);
        const int n = chunk(rng);
        pool.append(0, consecutive_tokens(n, 100 + first));
        const auto held = pool.block_table(0);
        for (int pos = std::max(0, first + 1 - 6); pos < first + n; ++pos) {
            ASSERT_NE(held[static_cast<size_t>(pos / 4)], kReleased) << "position " << pos << " in the pass from " << first;
        }
        EXPECT_LE(pool.used_block_count(), sliding_window_blocks(6, 4, 8));
        pool.commit(0);
    }
}

TEST(KvBlockPoolWindow, CuttingBackPastTheSlackTakesTheWindowBackFromTheCache) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    grow(pool, 0, 20);  // {released, released, 2, 3, 4}; the queue is 5, 6, 7, 0, 1
    pool.truncate(0, 9);  // position 9 reads 4..9: block 1 again
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{kReleased, 1, 2}));
    EXPECT_EQ(pool.ref_count(1), 1);
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{5, 6, 7, 0, 4, 3}));
    EXPECT_EQ(pool.sequence_length(0), 9);
    EXPECT_EQ(pool.bytes_in_use(), 5 * pool.layout().bytes_per_token());
    EXPECT_FALSE(pool.block_hash(2).has_value());  // partial now
}

TEST(KvBlockPoolWindow, CuttingBackIntoARecycledBlockIsRefusedAndChangesNothing) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    pool.add_sequence(1);
    grow(pool, 0, 20);
    pool.append(1, consecutive_tokens(20, 900));  // takes 5, 6, 7, 0 and 1: the released blocks are reused
    try {
        pool.truncate(0, 9);
        FAIL();
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("positions 4..7"), std::string::npos) << e.what();
    }
    EXPECT_EQ(pool.sequence_length(0), 20);
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{kReleased, kReleased, 2, 3, 4}));
    pool.truncate(0, 17);  // within the slack: nothing to take back
    EXPECT_EQ(table(pool, 0), (std::vector<int32_t>{kReleased, kReleased, 2, 3, 4}));
    pool.truncate(0, 0);
    EXPECT_TRUE(table(pool, 0).empty());
}

TEST(KvBlockPoolWindow, APrefixHitNeedsOnlyItsWindowCached) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    grow(pool, 0, 20);
    pool.free_sequence(0);  // queue: 5, 6, 7, 0, 1, 4, 3, 2, all five cached
    pool.add_sequence(1);
    EXPECT_EQ(pool.attach_cached_prefix(1, consecutive_tokens(21)), 20);  // position 20 reads 15..20: blocks 3 and 4
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{kReleased, kReleased, kReleased, 3, 4}));
    EXPECT_EQ(pool.ref_count(3), 1);
    EXPECT_EQ(pool.free_queue(), (std::vector<int32_t>{5, 6, 7, 0, 1, 2}));
    EXPECT_EQ(pool.tokens_in_use(), 8);
}

TEST(KvBlockPoolWindow, APrefixWhoseWindowWasEvictedFallsBackToAShorterOne) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    grow(pool, 0, 20);
    pool.free_sequence(0);
    pool.add_sequence(2);
    pool.append(2, consecutive_tokens(24, 900));  // takes 5, 6, 7, 0, 1 and 4
    pool.add_sequence(1);
    EXPECT_EQ(pool.attach_cached_prefix(1, consecutive_tokens(21)), 16);  // position 16 reads 11..16: blocks 2 and 3
    EXPECT_EQ(table(pool, 1), (std::vector<int32_t>{kReleased, kReleased, 2, 3}));
}

TEST(KvBlockPoolWindow, ForksShareTheHeldBlocksOnly) {
    KvBlockPool pool = window_pool(8);
    pool.add_sequence(0);
    grow(pool, 0, 18);  // {released, released, 2, 3, 4}, block 4 half full
    pool.fork_sequence(0, 1);
    EXPECT_EQ(pool.ref_count(2), 2);
    EXPECT_EQ(pool.ref_count(4), 2);
    const std::vector<BlockCopy> copies = pool.append(1, consecutive_tokens(1, 700));
    ASSERT_EQ(copies.size(), 1u);
    EXPECT_EQ(copies[0].src, 4);
    pool.free_sequence(0);
    pool.free_sequence(1);
    EXPECT_EQ(pool.used_block_count(), 0);
}

}  // namespace
}  // namespace inferscope
