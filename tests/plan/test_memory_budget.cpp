// The memory budget against values worked out by hand from the presets' assumptions.
#include "engine/plan/memory_budget.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/model/model_config.h"

namespace inferscope {
namespace {

BudgetQuery query(double gib, const std::string& weights, int users = 1, const std::string& kv = "f16") {
    BudgetQuery q;
    q.memory_gib = gib;
    q.weights = weights;
    q.users = users;
    q.kv_dtype = kv;
    return q;
}

TEST(MemoryBudget, KvBytesPerTokenOfThePresets) {
    // 2 x layers x kv_heads x head_dim x 2 bytes
    EXPECT_EQ(plan_memory_budget(budget_model_preset("0.5b"), query(8, "fp16")).kv_bytes_per_token, 12288.0);
    EXPECT_EQ(plan_memory_budget(budget_model_preset("7b"), query(8, "fp16")).kv_bytes_per_token, 131072.0);  // 128 KiB
    EXPECT_EQ(plan_memory_budget(budget_model_preset("13b"), query(8, "fp16")).kv_bytes_per_token, 819200.0);
    EXPECT_EQ(plan_memory_budget(budget_model_preset("70b"), query(8, "fp16")).kv_bytes_per_token, 327680.0);
    // 295 tokens of the 0.5B model: the allocator's 3,624,960 bytes
    EXPECT_EQ(295 * plan_memory_budget(budget_model_preset("0.5b"), query(8, "fp16")).kv_bytes_per_token, 3624960.0);
    // q8_0: 34 bytes per 32 values
    EXPECT_EQ(plan_memory_budget(budget_model_preset("0.5b"), query(8, "fp16", 1, "q8_0")).kv_bytes_per_token, 6528.0);
}

TEST(MemoryBudget, ResidentTokensAndTokensPerUser) {
    // 7B fp16 on 24 GiB: 24 GiB - 14e9 B - 1.5 GiB = 10,159,191,040 B = 77,508.48 tokens of 128 KiB
    const BudgetRow r = plan_memory_budget(budget_model_preset("7b"), query(24, "fp16", 8));
    EXPECT_DOUBLE_EQ(r.weight_bytes, 14.0e9);
    EXPECT_DOUBLE_EQ(r.kv_budget_bytes, 10159191040.0);
    EXPECT_EQ(r.max_resident_tokens, 77508);
    EXPECT_EQ(r.tokens_per_user, 77508 / 8);
    // At 128,000 tokens one user's cache exceeds the 13.0 GiB of fp16 weights.
    EXPECT_GT(128000 * r.kv_bytes_per_token, r.weight_bytes);
    // 7B int4 (4.125 bits) on 8 GiB: 3,609,375,000 B of weights, 25,710 tokens
    EXPECT_EQ(plan_memory_budget(budget_model_preset("7b"), query(8, "int4")).max_resident_tokens, 25710);
    // 13B int8 on 16 GiB with full MHA: 3,136 tokens
    EXPECT_EQ(plan_memory_budget(budget_model_preset("13b"), query(16, "int8")).max_resident_tokens, 3136);
    // 0.5B fp16 on 16 GiB: 1,186,620 tokens
    EXPECT_EQ(plan_memory_budget(budget_model_preset("0.5b"), query(16, "fp16")).max_resident_tokens, 1186620);
}

TEST(MemoryBudget, WhatDoesNotFitHasNoTokens) {
    const BudgetRow r = plan_memory_budget(budget_model_preset("7b"), query(8, "fp16", 4));
    EXPECT_LT(r.kv_budget_bytes, 0.0);
    EXPECT_EQ(r.max_resident_tokens, 0);
    EXPECT_EQ(r.tokens_per_user, 0);
    EXPECT_EQ(plan_memory_budget(budget_model_preset("70b"), query(24, "int4")).max_resident_tokens, 0);
}

TEST(MemoryBudget, TheLoadedModelIsAPresetToo) {
    ModelConfig c;
    c.n_layer = 24;
    c.n_head_kv = 14;  // the same model with full multi-head attention: 7x the cache
    c.head_dim = 64;
    const BudgetModel mha = budget_model_from_config("loaded", 494032768.0, c);
    EXPECT_EQ(plan_memory_budget(mha, query(8, "fp16")).kv_bytes_per_token, 86016.0);
}

TEST(MemoryBudget, RejectsWhatItCannotPlan) {
    EXPECT_THROW(budget_model_preset("3b"), InvalidArgument);
    EXPECT_THROW(weight_bits_per_parameter("int3"), InvalidArgument);
    EXPECT_THROW(kv_bytes_per_element("f32x"), InvalidArgument);
    EXPECT_THROW(plan_memory_budget(budget_model_preset("7b"), query(0, "fp16")), InvalidArgument);
    EXPECT_THROW(plan_memory_budget(budget_model_preset("7b"), query(8, "fp16", 0)), InvalidArgument);
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(MemoryBudget, SlidingWindowLayersLeaveRoomForLongerContexts) {
    // 26 layers, 22 of them local with a 512-token window; 1024 bytes per token per layer in F16.
    BudgetModel model{"gemma3-1b-shape", 1.0e9, 26, 1, 256, 22, 512};
    BudgetModel windowless = model;
    windowless.local_layers = 0;
    BudgetQuery q = query(4, "fp16", 2);
    q.reserve_gib = 1.0;
    const BudgetRow with_window = plan_memory_budget(model, q);
    const BudgetRow without = plan_memory_budget(windowless, q);
    const double per_user = with_window.kv_budget_bytes / 2;
    // Worked by hand: past the window a token costs the 4 global layers only.
    const double expected = (per_user - 1024.0 * 22 * 512) / (1024.0 * 4);
    EXPECT_EQ(with_window.tokens_per_user, static_cast<int64_t>(expected));
    EXPECT_EQ(without.tokens_per_user, static_cast<int64_t>(per_user / (1024.0 * 26)));
    EXPECT_GT(with_window.tokens_per_user, 6 * without.tokens_per_user);
}

}  // namespace
}  // namespace inferscope
