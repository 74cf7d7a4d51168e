// The whole model's KV cache: global and sliding-window layers in pools of their own, kept
// in step (kv_cache.h), and a session on a gemma3-shaped model whose local layers recycle
// their blocks computing exactly what a cache that keeps every block computes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "engine/core/error.h"
#include "engine/runtime/generator.h"
#include "engine/kv/kv_cache.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

using testing::consecutive_tokens;

KvLayout all_layers(int n_layer, int n_blocks) {
    KvLayout l;
    l.n_layer = n_layer;
    l.n_head_kv = 2;
    l.head_dim = 8;
    l.block_tokens = 4;
    l.n_blocks = n_blocks;
    return l;
}

TEST(KvCache, SplitPutsEachLayerInItsGroup) {
    const KvCacheLayout layout = split_kv_layout(all_layers(5, 10), {true, true, false, true, false}, 6, 3);
    EXPECT_EQ(layout.global.n_layer, 2);
    EXPECT_EQ(layout.local.n_layer, 3);
    EXPECT_EQ(layout.global.n_blocks, 10);
    EXPECT_EQ(layout.local.n_blocks, 3);
    EXPECT_EQ(layout.global.window_tokens, 0);
    EXPECT_EQ(layout.local.window_tokens, 6);
    EXPECT_EQ(layout.index_in_group, (std::vector<int>{0, 1, 0, 2, 1}));
    EXPECT_EQ(layout.layer_group[2], KvGroup::Global);
    EXPECT_EQ(layout.bytes_per_token(), all_layers(5, 10).bytes_per_token());
    const KvCacheLayout global_only = split_kv_layout(all_layers(5, 10), std::vector<bool>(5, false), 6, 3);
    EXPECT_FALSE(global_only.has_local());
    EXPECT_EQ(global_only.local.n_blocks, 0);
    EXPECT_THROW(split_kv_layout(all_layers(5, 10), {true, false}, 6, 3), InvalidArgument);
}

TEST(KvCache, APrefixIsAttachedOnlyAsFarAsBothPoolsHoldIt) {
    KvCache cache(split_kv_layout(all_layers(2, 16), {true, false}, 6, 8));
    cache.add_sequence(0);
    cache.append(0, consecutive_tokens(20));
    cache.commit(0);
    cache.free_sequence(0);  // both pools: blocks 0..4 cached, free
    cache.add_sequence(2);
    cache.append(2, consecutive_tokens(24, 900));  // global: 5..10; local: 5, 6, 7, 0, 1, 4 (evicting the cached 0, 1, 4)
    cache.add_sequence(1);
    EXPECT_EQ(cache.attach_cached_prefix(1, consecutive_tokens(21)), 16);
    EXPECT_EQ(cache.global().block_table(1).size(), 4u);
    EXPECT_EQ(cache.local()->block_table(1).size(), 4u);
    EXPECT_EQ(cache.sequence_length(1), 16);
}

TEST(KvCache, AFailedAppendLeavesBothPoolsAsTheyWere) {
    KvCache cache(split_kv_layout(all_layers(2, 8), {true, false}, 6, 2));
    cache.add_sequence(0);
    cache.append(0, consecutive_tokens(8));
    EXPECT_THROW(cache.append(0, consecutive_tokens(4, 108)), CapacityError);  // the local pool has 2 blocks
    EXPECT_EQ(cache.sequence_length(0), 8);
    EXPECT_EQ(cache.global().used_block_count(), 2);
    EXPECT_EQ(cache.used_block_count(), 4);
}

TEST(KvCache, AnAppendTheLocalPoolCannotHoldTouchesNeitherPool) {
    KvCache cache(split_kv_layout(all_layers(2, 16), {true, false}, 6, 2));
    cache.add_sequence(0);
    cache.append(0, consecutive_tokens(6));  // both pools: blocks 0 and 1, the second half full
    cache.fork_sequence(0, 1);
    const std::vector<int32_t> free_before = cache.global().free_queue();
    // Writing into the shared block 1 would copy it in both pools; the local one has no block left.
    EXPECT_THROW(cache.append(1, consecutive_tokens(1, 106)), CapacityError);
    EXPECT_EQ(cache.global().ref_count(1), 2);
    EXPECT_EQ(cache.global().free_queue(), free_before);
    EXPECT_EQ(cache.sequence_length(1), 6);
}

// Gemma 3's pattern on the tiny test model: layer 0 local (window 5), layer 1 global.
std::shared_ptr<const Model> tiny_gemma3() { return testing::tiny_model(testing::tiny_spec("gemma3")); }

SessionOptions window_session(bool recycle, int n_ctx = 0) {
    SessionOptions o = testing::test_session_options(KvDtype::F32, n_ctx);
    o.block_tokens = 4;
    o.recycle_window_blocks = recycle;
    return o;
}

// Prompt in passes of 3 tokens, then greedy decoding: every logit of every step.
std::vector<float> run_logits(InferenceSession& session, const std::vector<TokenId>& prompt, int n_new,
                              int* most_local_blocks = nullptr) {
    std::vector<float> all;
    GenerationOptions options;
    options.n_predict = n_new;
    options.n_batch = 3;
    options.sampling.temperature = 0;
    options.stop_at_end_of_generation = false;
    options.reuse_cached_prefix = false;
    const int observer = session.add_step_observer([&](const StepEvent&) {
        if (most_local_blocks != nullptr && session.kv_cache().local() != nullptr) {
            *most_local_blocks = std::max(*most_local_blocks, session.kv_cache().local()->used_block_count());
        }
    });
    generate(session, prompt, options, nullptr, [&](std::span<const float> row) { all.insert(all.end(), row.begin(), row.end()); });
    session.remove_step_observer(observer);
    return all;
}

TEST(SlidingWindowCache, RecyclingLocalBlocksChangesNoLogit) {
    const auto model = tiny_gemma3();
    const std::vector<TokenId> prompt = consecutive_tokens(40, 20);
    InferenceSession recycling(model, window_session(true));
    InferenceSession keeping(model, window_session(false));
    ASSERT_NE(recycling.kv_cache().local(), nullptr);
    EXPECT_EQ(keeping.kv_cache().local(), nullptr);
    int most_local_blocks = 0;
    const std::vector<float> windowed = run_logits(recycling, prompt, 30, &most_local_blocks);
    const std::vector<float> full = run_logits(keeping, prompt, 30);
    ASSERT_EQ(windowed.size(), full.size());
    EXPECT_EQ(windowed, full);  // the same values read in the same order: bit for bit
    // The local layer never held more than its window and a pass need.
    EXPECT_LE(most_local_blocks, sliding_window_blocks(5, 4, 3));
    EXPECT_EQ(recycling.kv_cache().used_block_count(), 0);
}

TEST(SlidingWindowCache, APromptLongerThanTheMicroBatchRunsInPartsWithTheSameLogits) {
    const auto model = tiny_gemma3();
    const int n = kWindowMicroBatchTokens + 88;
    std::vector<TokenId> prompt(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) prompt[static_cast<size_t>(i)] = 3 + (i * 37) % 290;
    InferenceSession recycling(model, window_session(true, n));
    InferenceSession keeping(model, window_session(false, n));
    const KvLayout& local = recycling.kv_cache().layout().local;
    EXPECT_EQ(local.n_blocks, sliding_window_blocks(5, 4, kWindowMicroBatchTokens));
    EXPECT_LT(local.n_blocks, n / 4);
    const auto windowed = testing::teacher_forced_logits(recycling, prompt);
    const auto full = testing::teacher_forced_logits(keeping, prompt);
    float worst = 0;
    float largest = 0;
    for (size_t i = 0; i < full.size(); ++i) {
        for (size_t v = 0; v < full[i].size(); ++v) {
            worst = std::max(worst, std::abs(windowed[i][v] - full[i][v]));
            largest = std::max(largest, std::abs(full[i][v]));
        }
    }
    // The parts change only how the products are batched (BLAS blocks a 512-row product
    // differently from a 600-row one), so the logits agree to float rounding of their scale.
    EXPECT_LE(worst, 5e-5f * largest);
    std::printf("[ measured ] %d tokens in parts of %d vs one pass: max |logit difference| = %.3g (largest |logit| %.3g)\n",
                n, kWindowMicroBatchTokens, worst, largest);
}

TEST(SlidingWindowCache, ACachedPrefixRestartsFromItsWindow) {
    const auto model = tiny_gemma3();
    const std::vector<TokenId> prompt = consecutive_tokens(41, 20);
    InferenceSession session(model, window_session(true));
    const auto first = testing::teacher_forced_logits(session, prompt);  // frees its sequence: blocks stay cached
    ScopedSequence seq(session);
    const int cached = session.attach_cached_prefix(seq.id(), prompt);
    EXPECT_EQ(cached, 40);
    const auto local_table = session.kv_cache().local()->block_table(seq.id());
    // Position 40 reads 36..40, and of those only block 9 (36..39) is in the cache.
    EXPECT_EQ(std::count_if(local_table.begin(), local_table.end(), [](int32_t b) { return b != KvBlockPool::kReleasedBlock; }),
              1);
    const Batch last = {{prompt.back(), seq.id(), cached, true}};
    const std::span<const float> logits = session.decode(last);
    const std::vector<float>& expected = first.back();
    float worst = 0;
    for (size_t v = 0; v < expected.size(); ++v) worst = std::max(worst, std::abs(logits[v] - expected[v]));
    EXPECT_LE(worst, 1e-4f);  // the last token alone against it in a batch of 41
}

TEST(SlidingWindowCache, CuttingBackIntoARecycledWindowRecomputesIt) {
    const auto model = tiny_gemma3();
    InferenceSession session(model, window_session(true, 1024));
    const std::vector<TokenId> prompt = consecutive_tokens(40, 20);
    const auto grow = [&](SeqId seq, const std::vector<TokenId>& ids) {
        for (size_t begin = 0; begin < ids.size(); begin += 8) {
            Batch batch;
            for (size_t i = begin; i < std::min(ids.size(), begin + 8); ++i) {
                batch.push_back({ids[i], seq, static_cast<int32_t>(i), false});
            }
            session.decode(batch);
        }
    };
    ScopedSequence a(session);
    grow(a.id(), prompt);
    // b's passes go round the local pool's free queue, through the blocks a released.
    ScopedSequence b(session);
    grow(b.id(), std::vector<TokenId>(static_cast<size_t>(session.kv_cache().local()->layout().n_blocks) * 4 + 40, 7));
    int steps = 0;
    const int observer = session.add_step_observer([&](const StepEvent&) { ++steps; });
    session.truncate_sequence(a.id(), 21);
    session.remove_step_observer(observer);
    EXPECT_EQ(steps, 1);  // the recomputation
    EXPECT_EQ(session.sequence_length(a.id()), 21);
    const Batch next = {{prompt[21], a.id(), 21, true}};
    const std::span<const float> logits = session.decode(next);

    InferenceSession keeping(model, window_session(false, 64));  // the full cache
    const auto expected = testing::teacher_forced_logits(keeping, std::vector<TokenId>(prompt.begin(), prompt.begin() + 22));
    float worst = 0;
    for (size_t v = 0; v < expected.back().size(); ++v) worst = std::max(worst, std::abs(logits[v] - expected.back()[v]));
    EXPECT_LE(worst, 1e-4f);
}

// A batch in parts whose last part would find the global pool full is refused before the
// first part runs (which would recycle the local window of a sequence's old end): the
// sequences keep their lengths and the next token sees what it would have seen without it.
TEST(SlidingWindowCache, ABatchTheGlobalPoolCannotHoldIsRefusedBeforeAnyPartRuns) {
    const auto model = tiny_gemma3();
    InferenceSession session(model, window_session(true, 1024));
    const std::vector<TokenId> prompt = consecutive_tokens(100, 20);
    ScopedSequence a(session);
    ScopedSequence b(session);
    Batch batch;
    for (int pos = 0; pos < 100; ++pos) batch.push_back({prompt[static_cast<size_t>(pos)], a.id(), pos, false});
    session.decode(batch);
    // a: 600 more tokens, b: 500; the global pool holds 1024 / 4 = 256 blocks, 25 + 275 are needed.
    batch.clear();
    for (int pos = 100; pos < 700; ++pos) batch.push_back({7, a.id(), pos, false});
    for (int pos = 0; pos < 500; ++pos) batch.push_back({9, b.id(), pos, false});
    try {
        session.decode(batch);
        FAIL();
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("the batch needs"), std::string::npos) << e.what();
    }
    EXPECT_EQ(session.sequence_length(a.id()), 100);
    EXPECT_EQ(session.sequence_length(b.id()), 0);

    const Batch next = {{prompt[99] + 1, a.id(), 100, true}};
    const std::span<const float> logits = session.decode(next);
    std::vector<TokenId> expected_input = prompt;
    expected_input.push_back(prompt[99] + 1);
    InferenceSession keeping(model, window_session(false, 1024));
    const auto expected = testing::teacher_forced_logits(keeping, expected_input);
    float worst = 0;
    for (size_t v = 0; v < expected.back().size(); ++v) worst = std::max(worst, std::abs(logits[v] - expected.back()[v]));
    EXPECT_LE(worst, 1e-4f);
}

}  // namespace
}  // namespace inferscope
