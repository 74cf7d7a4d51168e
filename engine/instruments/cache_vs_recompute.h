#pragma once
// KV cache vs recompute: the same greedy generation run twice through generate(), once with
// the KV cache (each step computes one new token) and once without (each step re-runs the
// whole sequence from scratch). Per generated token: measured wall time and the analytic
// MACs, attention-score memory and peak memory of both paths; the equivalence check
// (identical tokens, max |logit difference|); totals over T tokens with fitted exponents.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/instruments/forward_cost.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;
struct ModelConfig;

// The forward pass that produced one generated token on one path.
struct PathStepCost {
    int n_tokens = 0;      // tokens the pass computed (1 with the cache after the prompt)
    int context = 0;       // sequence length after the pass (positions attended over)
    double wall_ms = 0;    // measured wall time of the pass
    ForwardMacs macs;
    uint64_t score_bytes_per_head = 0;  // fp32 scores of one head: n_tokens x context x 4
    uint64_t peak_bytes = 0;            // forward_peak_memory(...).total()
};

struct CacheVsRecomputeStep {
    int step = 0;  // 1-based; step 1 is the prompt's prefill, identical on both paths
    TokenId token_cached = 0;
    TokenId token_recomputed = 0;
    double max_abs_logit_diff = 0;  // between the two rows the tokens were chosen from
    PathStepCost cached, recomputed;
};

// Least-squares slope of log(total) against log(T), T = 1..n tokens.
struct PathTotals {
    double wall_ms = 0;
    uint64_t macs = 0;
    uint64_t attention_macs = 0;
    uint64_t peak_bytes = 0;  // the largest step's
    double wall_ms_exponent = 0;
    double macs_exponent = 0;
    double attention_macs_exponent = 0;
};

// How a T-token generation's total MACs scale, from the analytic count alone: T tokens from
// a one-token prompt, the exponent taken as the local log-log slope log2(total(2T) / total(T)).
// Attention tends to exactly 2 (cached: per step linear in the context) and 3 (recomputed:
// per step quadratic); the whole model's exponents are lower until attention dominates
// the projections, FFN and output head, which cost the same per token at any context.
struct GenerationScaling {
    int tokens = 0;  // T
    double cached_attention = 0, recomputed_attention = 0;
    double cached_macs = 0, recomputed_macs = 0;
};
GenerationScaling generation_scaling(const ModelConfig& config, int tokens);
// T at which the report shows the limit of the attention exponents.
inline constexpr int kScalingLimitTokens = 65536;

struct CacheVsRecomputeReport {
    int n_prompt = 0;
    std::vector<CacheVsRecomputeStep> steps;
    bool tokens_identical = false;
    int first_divergent_step = 0;     // 0 when the tokens are identical
    double max_abs_logit_diff = 0;    // over the steps up to the first divergence (same inputs)
    double max_abs_logit = 0;         // the scale: max |logit| of the cached rows over those steps
    PathTotals cached, recomputed;
    GenerationScaling scaling_at_run;    // T = n_predict
    GenerationScaling scaling_at_limit;  // T = kScalingLimitTokens
};

// Runs `n_predict` greedy tokens after `prompt` both ways on fresh sequences of the session.
// CapacityError when prompt + n_predict tokens exceed the session's context; InvalidArgument
// for an empty prompt or n_predict < 1.
CacheVsRecomputeReport run_cache_vs_recompute(InferenceSession& session, std::span<const TokenId> prompt, int n_predict);

// Least-squares slope of log(y) against log(x); InvalidArgument unless there are two or more
// points, all positive, with distinct x.
double fitted_exponent(std::span<const double> x, std::span<const double> y);

// Fills totals and exponents from the per-step costs (T = 1..steps).
PathTotals path_totals(std::span<const PathStepCost> steps);

}  // namespace inferscope
