// The split ("flash-decoding") attention kernels against the CPU backend's attention and
// against one split: decode at short and long contexts, forced split counts (more splits than
// positions too), prompts in tiles of tokens, GQA ratios (more than 16 query heads per KV head
// too), head sizes, sliding windows, F16 and F32 caches, shuffled block tables and several
// sequences in one dispatch. The validation layer is on; any error it reports fails the test.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>
#include <string>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kv_storage.h"
#include "engine/core/error.h"
#include "gpu/op_harness.h"
#include "gpu/vk_attention.h"
#include "gpu_cpu_reference.h"
#include "gpu_test_util.h"

namespace inferscope {
namespace {

using testing::cpu_attention;
using testing::nmse;
using testing::random_floats;

// A batch of sequences of the given lengths and querying positions, their blocks a shuffled
// permutation of one pool (so no table is contiguous), with random K, V and queries.
struct SequenceBatch {
    std::vector<gpu::AttentionSequence> sequences;
    std::vector<float> q;
};

SequenceBatch random_sequence_batch(const gpu::AttentionShape& shape, const std::vector<int>& lengths,
                                    const std::vector<int>& n_query, std::mt19937& rng) {
    const int kv_dim = shape.n_head_kv * shape.head_dim;
    const int q_dim = shape.n_head * shape.head_dim;
    int total_blocks = 0;
    for (int length : lengths) total_blocks += (length + shape.block_tokens - 1) / shape.block_tokens;
    std::vector<int32_t> pool(static_cast<size_t>(total_blocks));
    std::iota(pool.begin(), pool.end(), 0);
    std::shuffle(pool.begin(), pool.end(), rng);
    SequenceBatch batch;
    size_t next_block = 0;
    for (size_t s = 0; s < lengths.size(); ++s) {
        gpu::AttentionSequence seq;
        const int blocks = (lengths[s] + shape.block_tokens - 1) / shape.block_tokens;
        seq.block_table.assign(pool.begin() + static_cast<std::ptrdiff_t>(next_block),
                               pool.begin() + static_cast<std::ptrdiff_t>(next_block + blocks));
        next_block += static_cast<size_t>(blocks);
        seq.k = random_floats(static_cast<size_t>(lengths[s] * kv_dim), rng, 2.0f);
        seq.v = random_floats(seq.k.size(), rng);
        seq.n_query = n_query[s];
        const std::vector<float> rows = random_floats(static_cast<size_t>(seq.n_query * q_dim), rng, 2.0f);
        batch.q.insert(batch.q.end(), rows.begin(), rows.end());
        batch.sequences.push_back(std::move(seq));
    }
    return batch;
}

std::vector<float> cpu_batch(const SequenceBatch& batch, const gpu::AttentionShape& shape) {
    const size_t q_dim = static_cast<size_t>(shape.n_head * shape.head_dim);
    std::vector<float> out;
    size_t row = 0;
    for (const gpu::AttentionSequence& seq : batch.sequences) {
        const auto rows = static_cast<size_t>(seq.n_query);
        const std::vector<float> q(batch.q.begin() + static_cast<std::ptrdiff_t>(row * q_dim),
                                   batch.q.begin() + static_cast<std::ptrdiff_t>((row + rows) * q_dim));
        const std::vector<float> o = cpu_attention(q, seq, shape);
        out.insert(out.end(), o.begin(), o.end());
        row += rows;
    }
    return out;
}

gpu::AttentionShape attention_shape(int n_head, int n_head_kv, int head_dim) {
    gpu::AttentionShape shape;
    shape.n_head = n_head;
    shape.n_head_kv = n_head_kv;
    shape.head_dim = head_dim;
    shape.block_tokens = 16;
    shape.scale = 0.7f / static_cast<float>(head_dim) * 8.0f;  // not 1/sqrt(head_dim): an explicit query scale
    return shape;
}

// Runs check(kv_f16, window) with shape's cache F32 and F16, without a window and with one of 50.
void for_each_cache_and_window(gpu::AttentionShape& shape, const std::function<void(bool, int)>& check) {
    for (bool kv_f16 : {false, true}) {
        for (int window : {0, 50}) {
            shape.kv_f16 = kv_f16;
            shape.window = window;
            check(kv_f16, window);
        }
    }
}

struct Heads {
    int n_head, n_head_kv, head_dim;
};

class GpuAttention : public ::testing::Test {
protected:
    void SetUp() override { INFERSCOPE_MAKE_OR_SKIP_GPU(gpu_, std::make_unique<gpu::OpHarness>(true)); }
    void TearDown() override {
        if (gpu_) {
            EXPECT_EQ(gpu_->validation_errors(), 0) << "Vulkan validation errors (printed above)";
        }
    }

    // The split kernels with each split count against the CPU and against one split.
    void expect_matches(const SequenceBatch& batch, const gpu::AttentionShape& shape, const std::vector<uint32_t>& splits,
                        const std::string& what) {
        const std::vector<float> expected = cpu_batch(batch, shape);
        const std::vector<float> one_split = gpu_->attention_batch(batch.q, batch.sequences, shape, 1);
        EXPECT_LT(nmse(one_split, expected), 1e-10) << what << ", one split";
        double worst = 0;
        for (uint32_t s : splits) {
            const std::vector<float> ours = gpu_->attention_batch(batch.q, batch.sequences, shape, s);
            const double e = nmse(ours, expected);
            EXPECT_LT(e, 1e-10) << what << ", " << s << " splits";
            EXPECT_LT(nmse(ours, one_split), 1e-10) << what << ", " << s << " splits against one";
            worst = std::max(worst, e);
        }
        std::printf("[ measured ] split attention %s: worst NMSE %.3g\n", what.c_str(), worst);
    }

    std::unique_ptr<gpu::OpHarness> gpu_;
    std::mt19937 rng_{7};
};

TEST(AttentionHeadParts, AKvHeadOfMoreThanSixteenQueryHeadsSharesThemAmongWorkgroups) {
    EXPECT_EQ(gpu::attention_head_parts(1), 1u);
    EXPECT_EQ(gpu::attention_head_parts(7), 1u);
    EXPECT_EQ(gpu::attention_head_parts(16), 1u);
    EXPECT_EQ(gpu::attention_head_parts(17), 2u);
    EXPECT_EQ(gpu::attention_head_parts(35), 3u);
    EXPECT_EQ(gpu::attention_head_parts(71), 5u);  // Falcon-7B's 71 heads on one KV head
}

TEST(AttentionPassTile, TilesWhereConsecutiveTokensShareASequence) {
    const auto tokens = [](std::vector<SeqId> seqs) {
        Batch batch;
        for (size_t i = 0; i < seqs.size(); ++i) batch.push_back({1, seqs[i], static_cast<int32_t>(i), true});
        return batch;
    };
    EXPECT_EQ(gpu::attention_pass_tile(tokens({0}), 8), 1u);
    EXPECT_EQ(gpu::attention_pass_tile(tokens({0, 1, 2, 3}), 8), 1u);        // decode: a token per sequence
    EXPECT_EQ(gpu::attention_pass_tile(tokens({0, 1, 0, 1}), 8), 1u);        // no two neighbours share a cache
    EXPECT_EQ(gpu::attention_pass_tile(tokens({3, 3, 3, 3, 3}), 8), 8u);     // verifying drafted tokens
    EXPECT_EQ(gpu::attention_pass_tile(tokens({0, 1, 2, 2, 2, 2}), 2), 2u);  // drafts beside decode tokens
    std::vector<SeqId> many(40);
    std::iota(many.begin(), many.end(), 0);
    EXPECT_EQ(gpu::attention_pass_tile(tokens(many), 8), 1u);                       // a wide decode batch
    EXPECT_EQ(gpu::attention_pass_tile(tokens(std::vector<SeqId>(40, 5)), 8), 8u);  // a prompt
}

TEST(AttentionSplitCount, FillsTheTargetWithoutSplitsShorterThanTheMinimum) {
    // Qwen2.5-0.5B (2 KV heads), one decode token, a large GPU's target of 512 workgroups.
    EXPECT_EQ(gpu::attention_split_count(36, 2, 1, 512), 1u);
    EXPECT_EQ(gpu::attention_split_count(4096, 2, 1, 512), 4096u / gpu::kAttentionMinSplitPositions);
    // A CPU driver's target of 4: two KV heads, two splits; eight KV heads, none.
    EXPECT_EQ(gpu::attention_split_count(4096, 2, 1, 4), 2u);
    EXPECT_EQ(gpu::attention_split_count(4096, 8, 1, 4), 1u);
    for (uint32_t target : {0u, 4u, 64u, 512u}) {
        for (uint32_t context : {1u, 255u, 256u, 1000u, 4096u, 32768u, 1u << 20}) {
            for (uint32_t kv_heads : {1u, 2u, 8u}) {
                for (uint32_t tokens : {1u, 4u, 64u, 512u}) {
                    const uint32_t s = gpu::attention_split_count(context, kv_heads, tokens, target);
                    EXPECT_GE(s, 1u);
                    EXPECT_LE(s, gpu::kAttentionMaxSplits);
                    if (s > 1) {
                        EXPECT_GE(context / s, gpu::kAttentionMinSplitPositions) << context;
                        EXPECT_LT(static_cast<uint64_t>(s - 1) * kv_heads * tokens, target)
                            << "more splits than the target needs";
                    }
                }
            }
        }
    }
    // More tokens or KV heads already fill the GPU: no more splits than for fewer.
    EXPECT_LE(gpu::attention_split_count(32768, 8, 64, 512), gpu::attention_split_count(32768, 2, 1, 512));
}

TEST_F(GpuAttention, DecodeOfSeveralSequencesMatchesCpuForEveryShapeAndSplitCount) {
    // Contexts around a chunk (128 positions) and a few chunks long, queried by their last
    // 1..3 positions: 8 query tokens from 6 sequences in one dispatch.
    const std::vector<int> lengths = {1, 63, 64, 65, 129, 300};
    const std::vector<int> n_query = {1, 1, 2, 1, 1, 2};
    // GQA 1, 2, 7 (Qwen 0.5B), 4 at head_dim 256 (Gemma 3), an odd head_dim, 16 per KV head, and
    // 35 and 18, which workgroups share (12, 12 and 11; 9 and 9).
    for (Heads h : {Heads{2, 2, 64}, Heads{4, 2, 64}, Heads{14, 2, 64}, Heads{4, 1, 256}, Heads{7, 1, 80}, Heads{16, 1, 32},
                    Heads{35, 1, 64}, Heads{36, 2, 48}}) {
        gpu::AttentionShape shape = attention_shape(h.n_head, h.n_head_kv, h.head_dim);
        const SequenceBatch batch = random_sequence_batch(shape, lengths, n_query, rng_);
        for_each_cache_and_window(shape, [&](bool kv_f16, int window) {
            const std::string what = std::to_string(h.n_head) + "/" + std::to_string(h.n_head_kv) + " heads x " +
                                     std::to_string(h.head_dim) + (kv_f16 ? ", F16" : ", F32") + " cache, window " +
                                     std::to_string(window);
            expect_matches(batch, shape, {1, 2, 3, 7, 16}, what);
        });
    }
}

TEST_F(GpuAttention, LongContextDecodeMatchesCpu) {
    // 4096 positions, a window of 1000 starting mid-block and mid-chunk, the backend's split
    // count and forced ones.
    gpu::AttentionShape shape = attention_shape(2, 1, 64);
    const SequenceBatch batch = random_sequence_batch(shape, {4096}, {1}, rng_);
    const uint32_t chosen = gpu::attention_split_count(4096, 1, 1, 512);
    for (int window : {0, 1000}) {
        shape.kv_f16 = true;
        shape.window = window;
        expect_matches(batch, shape, {1, 3, chosen, 64}, "4096 positions, window " + std::to_string(window));
    }
}

TEST_F(GpuAttention, MoreSplitsThanAWorkgroupHasThreadsCombineInRounds) {
    // 130 chunks of 128 positions: with the most splits, splits 128 and 129 hold positions,
    // and the combine weighs the splits 128 at a time.
    gpu::AttentionShape shape = attention_shape(4, 2, 64);
    shape.kv_f16 = true;
    const SequenceBatch batch = random_sequence_batch(shape, {130 * 128}, {1}, rng_);
    expect_matches(batch, shape, {129, gpu::kAttentionMaxSplits}, "16640 positions");
}

TEST_F(GpuAttention, SharedMemoryBuildMatchesCpu) {
    // The build for devices without subgroup arithmetic, forced on this one.
    const std::vector<int> lengths = {1, 65, 300};
    const std::vector<int> n_query = {1, 2, 1};
    for (Heads h : {Heads{14, 2, 64}, Heads{4, 1, 256}, Heads{7, 1, 80}}) {
        gpu::AttentionShape shape = attention_shape(h.n_head, h.n_head_kv, h.head_dim);
        const SequenceBatch batch = random_sequence_batch(shape, lengths, n_query, rng_);
        for_each_cache_and_window(shape, [&](bool kv_f16, int window) {
            const std::vector<float> expected = cpu_batch(batch, shape);
            for (uint32_t splits : {1u, 3u, 16u}) {
                EXPECT_LT(nmse(gpu_->attention_batch(batch.q, batch.sequences, shape, splits, true), expected), 1e-10)
                    << h.n_head << "/" << h.n_head_kv << " heads x " << h.head_dim << ", " << splits << " splits"
                    << (kv_f16 ? ", F16" : ", F32") << " cache, window " << window;
            }
        });
    }
}

TEST_F(GpuAttention, PromptTilesMatchCpuAcrossSequencesWindowsAndSplits) {
    // Prompts of six sequences in one dispatch (254 tokens), so that tiles of 2, 3 and the
    // device's most tokens start mid-sequence and hold the end of one and the start of the next.
    const std::vector<int> lengths = {1, 63, 64, 65, 129, 300};
    const std::vector<int> n_query = {1, 20, 64, 3, 129, 37};
    for (Heads h : {Heads{8, 4, 8}, Heads{2, 2, 64}, Heads{14, 2, 64}, Heads{4, 1, 256}, Heads{7, 1, 80}, Heads{16, 1, 32},
                    Heads{36, 2, 48}}) {
        gpu::AttentionShape shape = attention_shape(h.n_head, h.n_head_kv, h.head_dim);
        const SequenceBatch batch = random_sequence_batch(shape, lengths, n_query, rng_);
        const auto group = static_cast<uint32_t>(h.n_head / h.n_head_kv);
        const uint32_t most = gpu_->attention_tile_tokens(group, static_cast<uint32_t>(h.head_dim));
        EXPECT_TRUE(most * std::min(group, gpu::kAttentionMaxGroupHeads) <= gpu::kAttentionMaxTileRows || most == 1)
            << most << " tokens of " << group << " heads";
        std::set<uint32_t> tiles = {most};
        for (uint32_t t : {2u, 3u}) {
            if (t < most) tiles.insert(t);
        }
        double worst = 0;
        for_each_cache_and_window(shape, [&](bool kv_f16, int window) {
            const std::vector<float> expected = cpu_batch(batch, shape);
            for (uint32_t tile : tiles) {
                for (uint32_t splits : {1u, 3u}) {
                    const double e = nmse(gpu_->attention_batch(batch.q, batch.sequences, shape, splits, false, tile), expected);
                    EXPECT_LT(e, 1e-10) << h.n_head << "/" << h.n_head_kv << " heads x " << h.head_dim << ", tiles of " << tile
                                        << ", " << splits << " splits" << (kv_f16 ? ", F16" : ", F32") << " cache, window "
                                        << window;
                    worst = std::max(worst, e);
                }
            }
        });
        // The build without subgroup operations, in tiles of the most tokens it fits (its scores
        // take shared memory of their own).
        shape.kv_f16 = true;
        shape.window = 0;
        uint32_t shared_tile = most;
        for (; shared_tile > 1; --shared_tile) {
            try {
                const double e =
                    nmse(gpu_->attention_batch(batch.q, batch.sequences, shape, 1, true, shared_tile), cpu_batch(batch, shape));
                EXPECT_LT(e, 1e-10) << "shared-memory build, " << h.n_head << "/" << h.n_head_kv << " heads x " << h.head_dim
                                    << ", tiles of " << shared_tile;
                break;
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("shared memory"), std::string::npos) << e.what();
            }
        }
        std::printf(
            "[ measured ] prompt tiles, %d/%d heads x %d: up to %u tokens per tile (%u without subgroups), worst NMSE %.3g\n",
            h.n_head, h.n_head_kv, h.head_dim, most, shared_tile, worst);
    }
}

TEST_F(GpuAttention, FifteenTokensFoldedIntoYMatchCpu) {
    // A launch limit of 7 workgroups along X: the launch folds its groups into Y, and the split counters follow.
    std::unique_ptr<gpu::OpHarness> narrow;
    INFERSCOPE_MAKE_OR_SKIP_GPU(narrow, std::make_unique<gpu::OpHarness>(true, 7));
    gpu::AttentionShape shape = attention_shape(8, 2, 48);
    shape.kv_f16 = true;
    const SequenceBatch batch = random_sequence_batch(shape, {20, 200, 7, 140}, {5, 4, 3, 3}, rng_);
    const std::vector<float> expected = cpu_batch(batch, shape);
    for (uint32_t splits : {1u, 3u}) {
        EXPECT_LT(nmse(narrow->attention_batch(batch.q, batch.sequences, shape, splits), expected), 1e-10) << splits << " splits";
    }
    EXPECT_EQ(narrow->validation_errors(), 0);
}

}  // namespace
}  // namespace inferscope
