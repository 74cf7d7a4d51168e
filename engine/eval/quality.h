#pragma once
// How far a candidate model (e.g. a quantized one) is from a reference model, measured by
// running both side by side on the same tokens: per-token KL divergence of the next-token
// distributions, top-1 agreement and both perplexities (llama-perplexity's chunks and
// scored positions, engine/eval/perplexity.h), streaming, so no logits are ever stored
// beyond one step; and greedy agreement: the reference generates greedily, the candidate,
// teacher-forced on the same prefix, picks its argmax at each position.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/eval/perplexity.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;

// The text is cut and scored in chunks exactly as perplexity's.
using DistributionOptions = PerplexityOptions;

struct DistributionComparison {
    double reference_ppl = 0;
    double reference_ppl_stderr = 0;
    double candidate_ppl = 0;
    double candidate_ppl_stderr = 0;
    int64_t n_tokens = 0;       // scored positions
    int n_chunks = 0;
    double kl_mean = 0;         // mean over positions of KL(P_reference || P_candidate), nats
    double kl_p99 = 0;          // 99th percentile (nearest rank)
    double kl_max = 0;
    int64_t top1_matches = 0;   // positions where both argmaxes agree (ties: lowest id)
    double top1_agreement = 0;  // top1_matches / n_tokens
    bool cancelled = false;
};

// KL(P || Q) in nats of the softmax distributions of two logit rows of equal length.
double kl_divergence(std::span<const float> reference_logits, std::span<const float> candidate_logits);
// The same between softmax(logits / temperature) rows (distillation's tempered labels).
// InvalidArgument unless temperature > 0 and the rows have equal, non-zero length.
double kl_divergence(std::span<const float> reference_logits, std::span<const float> candidate_logits,
                     double temperature);

// Both sessions must use models with the same vocabulary; `tokens` as for perplexity (the
// same InvalidArgument rules apply to each session). Perplexities equal compute_perplexity's.
DistributionComparison compare_distributions(InferenceSession& reference, InferenceSession& candidate,
                                             std::span<const TokenId> tokens, const DistributionOptions& options);

struct AgreementResult {
    int64_t positions = 0;
    int64_t matches = 0;
    double agreement() const { return positions > 0 ? static_cast<double>(matches) / static_cast<double>(positions) : 0.0; }
    std::vector<int> matches_per_prompt;
};

// For each prompt: the reference generates `n_positions` tokens greedily (no stop at end
// of generation, so every prompt counts n_positions); the candidate reads prompt +
// generated tokens in one teacher-forced pass and its argmax at each of the n_positions
// predicting positions is compared with the reference's token. InvalidArgument when a
// prompt is empty or prompt + n_positions exceeds either context.
AgreementResult greedy_agreement(InferenceSession& reference, InferenceSession& candidate,
                                 std::span<const std::vector<TokenId>> prompts, int n_positions);

}  // namespace inferscope
