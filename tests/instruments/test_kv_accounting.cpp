// KV bytes: the formula for Qwen2.5-0.5B's shape (hand-computed values), the
// paged pool's accounting for the same shape, and the allocator against the formula after
// really running tokens through a small model.
#include "engine/instruments/kv_accounting.h"

#include <gtest/gtest.h>

#include <numeric>

#include "engine/core/error.h"
#include "engine/model/model_config.h"
#include "support/engine_helpers.h"
#include "support/model_configs.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

using testing::gemma3_1b_config;
using testing::qwen05b_config;

TEST(KvFormula, QwenHalfBillionShapeByHand) {
    const ModelConfig c = qwen05b_config();
    const double per_token = formula_kv_bytes_per_token(c, KvDtype::F16);
    EXPECT_EQ(per_token, 12288.0);  // 2 x 24 x 2 x 64 x 2
    EXPECT_EQ(295 * per_token, 3624960.0);
    EXPECT_EQ(formula_kv_bytes_per_token(c, KvDtype::F32), 24576.0);
    // 32 x 2,048 = 64 x 1,024 = 128 x 512 = 65,536 tokens = 768 MiB
    const auto rows = kv_layout_rows(per_token, parse_kv_user_layouts("32x2048,64x1024,128x512"));
    ASSERT_EQ(rows.size(), 3u);
    for (const KvLayoutRow& r : rows) {
        EXPECT_EQ(r.resident_tokens, 65536);
        EXPECT_EQ(r.bytes, 768.0 * 1024 * 1024);
    }
}

TEST(KvFormula, ThePoolAgreesForTheQwenShape) {
    // 295 tokens in 16-token blocks: 19 blocks, 304 slots, the last block 9 slots short.
    KvLayout layout;
    layout.n_layer = 24;
    layout.n_head_kv = 2;
    layout.head_dim = 64;
    layout.dtype = KvDtype::F16;
    layout.block_tokens = 16;
    layout.n_blocks = 32;
    KvBlockPool pool(layout);
    pool.add_sequence(0);
    std::vector<TokenId> tokens(295);
    std::iota(tokens.begin(), tokens.end(), 0);
    pool.append(0, tokens);
    EXPECT_EQ(pool.bytes_in_use(), 3624960u);
    EXPECT_EQ(pool.bytes_reserved(), 19u * 16 * 12288);
    EXPECT_EQ(pool.bytes_reserved() - pool.bytes_in_use(), 9u * 12288);
}

TEST(KvAccounting, AllocatorEqualsTheFormulaForReallyRunTokens) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    const std::vector<KvUserLayout> layouts = {{2, 10}};
    const KvAccountingReport r = measure_kv_accounting(session, 37, layouts);
    // tiny qwen2: 2 layers x 2 KV heads x 16 x 2 bytes x (K and V) = 256 bytes/token
    EXPECT_EQ(r.formula_bytes_per_token, 256.0);
    EXPECT_EQ(r.formula_bytes, 37 * 256.0);
    EXPECT_EQ(static_cast<double>(r.allocator_bytes_in_use), r.formula_bytes);
    EXPECT_EQ(r.blocks_used, 3);                                // ceil(37 / 16)
    EXPECT_EQ(r.allocator_bytes_reserved, 3u * 16 * 256);
    EXPECT_EQ(r.block_rounding_waste_bytes, 11u * 256);          // 48 - 37 slots
    EXPECT_EQ(r.layer_tensor_bytes, 2u * 37 * 16 * 2);           // (1, 2, 37, 16) f16
    EXPECT_EQ(2 * r.n_layer * r.layer_tensor_bytes, r.allocator_bytes_in_use);
    ASSERT_EQ(r.layouts.size(), 1u);
    EXPECT_EQ(r.layouts[0].bytes, 20 * 256.0);
    EXPECT_EQ(session.kv_cache().sequence_ids().size(), 0u);  // the sequence was freed
}

TEST(KvAccounting, RejectsBadInput) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 32));
    EXPECT_THROW(measure_kv_accounting(session, 33, {}), CapacityError);
    EXPECT_THROW(measure_kv_accounting(session, 0, {}), InvalidArgument);
    for (const char* bad : {"", "32", "32x", "x2048", "32x2048,", "0x10", "-1x10", "32x2048x2", "3.5x10"}) {
        EXPECT_THROW(parse_kv_user_layouts(bad), InvalidArgument) << bad;
    }
}


TEST(KvWindowSplit, TheReportOfARealRunCarriesIt) {
    const auto model = testing::tiny_model(testing::tiny_spec("gemma3"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F32));
    const KvAccountingReport r = measure_kv_accounting(session, 20, {});
    // tiny gemma3: 2 layers, the first local with a window of 5.
    EXPECT_EQ(r.window.local_layers, 1);
    EXPECT_EQ(r.window.global_layers, 1);
    EXPECT_EQ(r.window.local_bytes, r.window.layer_bytes_per_token * 5);
    EXPECT_EQ(r.window.global_bytes, r.window.layer_bytes_per_token * 20);
}

TEST(KvWindowSplit, ThePoolsOfARealRunHoldTheGlobalContextAndTheLocalWindow) {
    const auto model = testing::tiny_model(testing::tiny_spec("gemma3"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F32));
    const KvAccountingReport r = measure_kv_accounting(session, 60, {});
    ASSERT_EQ(r.pool_groups.size(), 2u);
    const KvGroupUsage& global = r.pool_groups[0];
    const KvGroupUsage& local = r.pool_groups[1];
    const auto layer_bytes = static_cast<uint64_t>(r.window.layer_bytes_per_token);
    EXPECT_EQ(global.group, KvGroup::Global);
    EXPECT_EQ(global.blocks_used, 4);  // 60 tokens in blocks of 16
    EXPECT_EQ(global.bytes_in_use, 60 * layer_bytes);
    EXPECT_EQ(local.group, KvGroup::Local);
    EXPECT_EQ(local.window_tokens, 5);
    // Position 60 reads 56..60; with one block of slack the local layer keeps blocks 2 and 3.
    EXPECT_EQ(local.blocks_used, 2);
    EXPECT_EQ(local.bytes_in_use, (60 - 32) * layer_bytes);
    EXPECT_EQ(r.allocator_bytes_in_use, global.bytes_in_use + local.bytes_in_use);
    EXPECT_EQ(r.blocks_used, 6);

    SessionOptions full = testing::test_session_options(KvDtype::F32);
    full.recycle_window_blocks = false;
    InferenceSession keeping(model, full);
    const KvAccountingReport all = measure_kv_accounting(keeping, 60, {});
    ASSERT_EQ(all.pool_groups.size(), 1u);
    EXPECT_EQ(all.pool_groups[0].layers, 2);
    EXPECT_EQ(all.allocator_bytes_in_use, 2 * 60 * layer_bytes);
}

}  // namespace
}  // namespace inferscope
