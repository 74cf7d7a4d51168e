// Cache vs recompute on a small synthetic model: the two paths against the engine's own
// greedy drivers, the per-step shapes and MACs, and the fitted exponents.
#include "engine/instruments/cache_vs_recompute.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

const std::vector<TokenId> kPrompt = {1, 17, 42, 99, 5};

TEST(CacheVsRecompute, BothPathsGiveTheEnginesGreedyTokens) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F32, 64));
    const int n = 12;
    const CacheVsRecomputeReport r = run_cache_vs_recompute(session, kPrompt, n);
    const testing::GreedyRun with_cache = testing::greedy_with_cache(session, kPrompt, n);
    const testing::GreedyRun without = testing::greedy_without_cache(session, kPrompt, n);
    ASSERT_EQ(r.steps.size(), static_cast<size_t>(n));
    double logit_scale = 0;
    for (int s = 0; s < n; ++s) {
        EXPECT_EQ(r.steps[s].token_cached, with_cache.ids[s]) << "step " << s + 1;
        EXPECT_EQ(r.steps[s].token_recomputed, without.ids[s]) << "step " << s + 1;
        logit_scale = std::max(logit_scale, static_cast<double>(testing::max_abs(with_cache.logits[s])));
    }
    EXPECT_TRUE(r.tokens_identical);
    EXPECT_EQ(r.first_divergent_step, 0);
    EXPECT_LT(r.max_abs_logit_diff, 1e-4 * logit_scale);  // float tolerance: same math, other summation order
    EXPECT_DOUBLE_EQ(r.max_abs_logit, logit_scale);
    EXPECT_EQ(session.kv_cache().sequence_ids().size(), 0u);  // both runs freed their sequences
}

TEST(CacheVsRecompute, StepShapesAndMacsFollowThePaths) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    const int n = 6;
    const auto p = static_cast<int>(kPrompt.size());
    const CacheVsRecomputeReport r = run_cache_vs_recompute(session, kPrompt, n);
    EXPECT_EQ(r.n_prompt, p);
    uint64_t cached_macs = 0, recomputed_macs = 0;
    for (const CacheVsRecomputeStep& s : r.steps) {
        const int context = p + s.step - 1;  // step 1 runs the prompt; step s sees s - 1 generated tokens
        EXPECT_EQ(s.cached.context, context);
        EXPECT_EQ(s.recomputed.context, context);
        EXPECT_EQ(s.cached.n_tokens, s.step == 1 ? p : 1);
        EXPECT_EQ(s.recomputed.n_tokens, context);
        EXPECT_EQ(s.cached.macs.total(), forward_macs(model->config(), context - s.cached.n_tokens, s.cached.n_tokens, 1).total());
        EXPECT_EQ(s.recomputed.macs.total(), forward_macs(model->config(), 0, context, 1).total());
        EXPECT_EQ(s.recomputed.score_bytes_per_head, static_cast<uint64_t>(context) * context * 4);
        EXPECT_EQ(s.cached.peak_bytes, forward_peak_memory(model->config(), context - s.cached.n_tokens, s.cached.n_tokens, 1, 2).total());
        EXPECT_GT(s.cached.wall_ms, 0.0);
        cached_macs += s.cached.macs.total();
        recomputed_macs += s.recomputed.macs.total();
    }
    EXPECT_EQ(r.cached.macs, cached_macs);
    EXPECT_EQ(r.recomputed.macs, recomputed_macs);
    EXPECT_EQ(r.recomputed.peak_bytes, r.steps.back().recomputed.peak_bytes);
    EXPECT_GT(r.recomputed.peak_bytes, r.cached.peak_bytes);
}

TEST(CacheVsRecompute, RefusesWhatDoesNotFit) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 16));
    EXPECT_THROW(run_cache_vs_recompute(session, kPrompt, 12), CapacityError);  // 5 + 12 > 16
    EXPECT_THROW(run_cache_vs_recompute(session, {}, 4), InvalidArgument);
    EXPECT_THROW(run_cache_vs_recompute(session, kPrompt, 0), InvalidArgument);
}

TEST(FittedExponent, RecoversAPowerLaw) {
    std::vector<double> x, y;
    for (int i = 1; i <= 20; ++i) {
        x.push_back(i);
        y.push_back(3.0 * std::pow(i, 2.5));
    }
    EXPECT_NEAR(fitted_exponent(x, y), 2.5, 1e-12);
    const std::vector<double> one = {1.0};
    EXPECT_THROW(fitted_exponent(one, one), InvalidArgument);
    const std::vector<double> same = {2.0, 2.0}, values = {1.0, 2.0}, negative = {1.0, -2.0};
    EXPECT_THROW(fitted_exponent(same, values), InvalidArgument);
    EXPECT_THROW(fitted_exponent(values, negative), InvalidArgument);
}

// Generating T tokens from a one-token prompt, analytically: the cached path's attention
// totals T(T+1)/2 x c and the recomputing path's T(T+1)(T+2)/6 x c, whose log-log slopes
// approach 2 and 3 as T grows; the whole model's MACs grow more slowly at small T, because
// the per-token projections and FFN (linear and quadratic in T) dominate there.
std::pair<PathTotals, PathTotals> analytic_totals(const ModelConfig& c, int n_tokens) {
    std::vector<PathStepCost> cached, recomputed;
    for (int s = 1; s <= n_tokens; ++s) {
        PathStepCost a;
        a.macs = forward_macs(c, s - 1, 1, 1);
        a.wall_ms = 1.0;
        cached.push_back(a);
        PathStepCost b;
        b.macs = forward_macs(c, 0, s, 1);
        b.wall_ms = 1.0;
        recomputed.push_back(b);
    }
    return {path_totals(cached), path_totals(recomputed)};
}

TEST(PathTotals, AttentionExponentsApproachTwoAndThree) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const ModelConfig& c = model->config();
    const uint64_t per_position = uint64_t{2} * 4 * 2 * 16;  // layers x heads x (QK + PV) x head_dim
    const auto [cached48, recomputed48] = analytic_totals(c, 48);
    EXPECT_EQ(cached48.attention_macs, per_position * 48 * 49 / 2);
    EXPECT_EQ(recomputed48.attention_macs, per_position * 48 * 49 * 50 / 6);
    EXPECT_NEAR(cached48.wall_ms_exponent, 1.0, 1e-12);  // a constant step time totals linearly
    const auto [cached, recomputed] = analytic_totals(c, 4096);
    EXPECT_NEAR(cached.attention_macs_exponent, 2.0, 0.01);
    EXPECT_NEAR(recomputed.attention_macs_exponent, 3.0, 0.02);
    // At T = 48 the whole model's exponents are well below the attention's.
    EXPECT_LT(cached48.macs_exponent, cached48.attention_macs_exponent - 0.5);
    EXPECT_LT(recomputed48.macs_exponent, recomputed48.attention_macs_exponent - 0.5);
}

TEST(GenerationScaling, LocalExponentsOfTheAnalyticTotals) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    const ModelConfig& c = model->config();
    // Attention totals after T and 2T steps: T(T+1)/2 and T(T+1)(T+2)/6 (times a constant).
    const GenerationScaling g = generation_scaling(c, 48);
    EXPECT_NEAR(g.cached_attention, std::log2((96.0 * 97) / (48.0 * 49)), 1e-12);
    EXPECT_NEAR(g.recomputed_attention, std::log2((96.0 * 97 * 98) / (48.0 * 49 * 50)), 1e-12);
    const GenerationScaling limit = generation_scaling(c, kScalingLimitTokens);
    EXPECT_NEAR(limit.cached_attention, 2.0, 1e-4);
    EXPECT_NEAR(limit.recomputed_attention, 3.0, 1e-4);
    // The whole model's exponents sit below the attention's: per-token work that does not
    // grow with the context (projections, FFN, output head) weighs in.
    EXPECT_LT(g.cached_macs, g.cached_attention - 0.5);
    EXPECT_LT(g.recomputed_macs, g.recomputed_attention - 0.5);
    EXPECT_THROW(generation_scaling(c, 0), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
