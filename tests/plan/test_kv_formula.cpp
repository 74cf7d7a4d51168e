// The KV-cache formula's consequences for hand-written shapes: the attention what-if rows
// and the split between global and sliding-window layers.
#include "engine/plan/kv_formula.h"

#include <gtest/gtest.h>

#include "engine/model/model_config.h"
#include "support/model_configs.h"

namespace inferscope {
namespace {

using testing::gemma3_1b_config;
using testing::qwen05b_config;

TEST(KvFormula, AttentionWhatIf) {
    const auto rows = kv_attention_what_if(qwen05b_config(), KvDtype::F16);
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].attention, "MHA");
    EXPECT_EQ(rows[0].kv_heads, 14);
    EXPECT_EQ(rows[0].bytes_per_token, 86016.0);  // exactly 7x
    EXPECT_EQ(rows[0].ratio_to_model, 7.0);
    EXPECT_EQ(rows[1].attention, "GQA");
    EXPECT_TRUE(rows[1].is_model);
    EXPECT_EQ(rows[1].bytes_per_token, 12288.0);
    EXPECT_EQ(rows[2].attention, "MQA");
    EXPECT_EQ(rows[2].bytes_per_token, 6144.0);
    EXPECT_EQ(rows[2].ratio_to_model, 0.5);
    // A full-MHA model has no separate GQA row; its MHA row is its own.
    ModelConfig mha = qwen05b_config();
    mha.n_head_kv = 14;
    const auto mha_rows = kv_attention_what_if(mha, KvDtype::F16);
    ASSERT_EQ(mha_rows.size(), 2u);
    EXPECT_TRUE(mha_rows[0].is_model);
    EXPECT_EQ(mha_rows[1].ratio_to_model, 1.0 / 14.0);
}

TEST(KvFormula, BytesPerTokenForAnyKvHeadCount) {
    // 2 (K and V) x 24 layers x heads x 64 dimensions x bytes per element.
    EXPECT_EQ(formula_kv_bytes_per_token(qwen05b_config(), KvDtype::F16), 12288.0);
    EXPECT_EQ(formula_kv_bytes_per_token(qwen05b_config(), 14, KvDtype::F16), 86016.0);
    EXPECT_EQ(formula_kv_bytes_per_token(qwen05b_config(), 1, KvDtype::F32), 12288.0);
}

TEST(KvWindowSplit, LocalLayersStopGrowingAtTheWindow) {
    const ModelConfig c = gemma3_1b_config();
    // One layer: K and V of one 256-wide head in F16 = 1024 bytes per token.
    const KvWindowSplit at_4k = kv_window_split(c, KvDtype::F16, 4096);
    EXPECT_EQ(at_4k.global_layers, 4);
    EXPECT_EQ(at_4k.local_layers, 22);
    EXPECT_EQ(at_4k.window, 512);
    EXPECT_EQ(at_4k.layer_bytes_per_token, 1024.0);
    EXPECT_EQ(at_4k.global_bytes, 4 * 1024.0 * 4096);
    EXPECT_EQ(at_4k.local_bytes, 22 * 1024.0 * 512);
    EXPECT_EQ(at_4k.all_global_bytes, 26 * 1024.0 * 4096);
    // Inside the window every layer grows alike.
    const KvWindowSplit at_100 = kv_window_split(c, KvDtype::F16, 100);
    EXPECT_EQ(at_100.windowed_bytes(), at_100.all_global_bytes);
    // A model without local layers: nothing is saved.
    const KvWindowSplit plain = kv_window_split(qwen05b_config(), KvDtype::F16, 4096);
    EXPECT_EQ(plain.local_layers, 0);
    EXPECT_EQ(plain.windowed_bytes(), plain.all_global_bytes);
}

}  // namespace
}  // namespace inferscope
