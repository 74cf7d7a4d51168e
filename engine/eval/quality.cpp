#include "engine/eval/quality.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/eval/perplexity.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

double log_sum_exp(std::span<const float> logits) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (float logit : logits) sum += std::exp(static_cast<double>(logit - max_logit));
    return static_cast<double>(max_logit) + std::log(sum);
}

// Running totals of a comparison: NLLs of both models, KL per position, top-1 matches.
struct ComparisonSums {
    NllAccumulator reference;
    NllAccumulator candidate;
    std::vector<double> kl;  // [scored positions]
    int64_t top1_matches = 0;

    void add(std::span<const float> ref_row, std::span<const float> cand_row, TokenId next) {
        reference.add(negative_log_likelihood(ref_row, next));
        candidate.add(negative_log_likelihood(cand_row, next));
        kl.push_back(kl_divergence(ref_row, cand_row));
        top1_matches += argmax(ref_row) == argmax(cand_row) ? 1 : 0;
    }
};

// One chunk through both models in lockstep, batch by batch, as compute_perplexity scores it.
void compare_chunk(InferenceSession& reference, InferenceSession& candidate, std::span<const TokenId> chunk,
                   int n_batch, ComparisonSums& sums) {
    const int n_ctx = static_cast<int>(chunk.size());
    const int first_scored = n_ctx / 2;
    const auto n_vocab = static_cast<size_t>(reference.model().config().n_vocab);
    ScopedSequence ref_seq(reference);
    ScopedSequence cand_seq(candidate);
    Batch ref_batch;
    Batch cand_batch;
    for (int start = 0; start < n_ctx; start += n_batch) {
        const int end = std::min(n_ctx, start + n_batch);
        ref_batch.clear();
        cand_batch.clear();
        for (int i = start; i < end; ++i) {
            const bool scored = i >= first_scored && i < n_ctx - 1;
            ref_batch.push_back({chunk[static_cast<size_t>(i)], ref_seq.id(), i, scored});
            cand_batch.push_back({chunk[static_cast<size_t>(i)], cand_seq.id(), i, scored});
        }
        // Both spans stay valid: each belongs to its own session until that session's next call.
        const std::span<const float> ref_logits = reference.decode(ref_batch, StepPhase::Prefill);
        const std::span<const float> cand_logits = candidate.decode(cand_batch, StepPhase::Prefill);
        size_t row = 0;
        for (int i = start; i < end; ++i) {
            if (!ref_batch[static_cast<size_t>(i - start)].output) continue;
            sums.add(ref_logits.subspan(row * n_vocab, n_vocab), cand_logits.subspan(row * n_vocab, n_vocab),
                     chunk[static_cast<size_t>(i + 1)]);
            ++row;
        }
    }
}

void check_same_vocabulary(const InferenceSession& reference, const InferenceSession& candidate) {
    const int a = reference.model().config().n_vocab;
    const int b = candidate.model().config().n_vocab;
    if (a != b) {
        throw InvalidArgument("cannot compare models with different vocabularies (" + std::to_string(a) + " vs " +
                              std::to_string(b) + " tokens)");
    }
}

}  // namespace

double kl_divergence(std::span<const float> reference_logits, std::span<const float> candidate_logits) {
    const double lse_p = log_sum_exp(reference_logits);
    const double lse_q = log_sum_exp(candidate_logits);
    double kl = 0.0;
    for (size_t i = 0; i < reference_logits.size(); ++i) {
        const double log_p = reference_logits[i] - lse_p;
        const double log_q = candidate_logits[i] - lse_q;
        kl += std::exp(log_p) * (log_p - log_q);
    }
    return std::max(0.0, kl);  // rounding can leave -1e-17 for identical rows
}

double kl_divergence(std::span<const float> reference_logits, std::span<const float> candidate_logits,
                     double temperature) {
    if (!(temperature > 0.0)) throw InvalidArgument("temperature must be positive, got " + std::to_string(temperature));
    if (reference_logits.empty() || reference_logits.size() != candidate_logits.size()) {
        throw InvalidArgument("KL divergence needs two logit rows of equal length (got " +
                              std::to_string(reference_logits.size()) + " and " + std::to_string(candidate_logits.size()) + ")");
    }
    if (temperature == 1.0) return kl_divergence(reference_logits, candidate_logits);
    const auto tempered = [temperature](std::span<const float> logits) {
        std::vector<float> scaled(logits.size());
        for (size_t i = 0; i < logits.size(); ++i) scaled[i] = static_cast<float>(logits[i] / temperature);
        return scaled;
    };
    return kl_divergence(tempered(reference_logits), tempered(candidate_logits));
}

DistributionComparison compare_distributions(InferenceSession& reference, InferenceSession& candidate,
                                             std::span<const TokenId> tokens, const DistributionOptions& options) {
    check_same_vocabulary(reference, candidate);
    const auto n_tokens = static_cast<int64_t>(tokens.size());
    check_perplexity_input(n_tokens, options.n_ctx, reference.context_size());
    check_perplexity_input(n_tokens, options.n_ctx, candidate.context_size());
    DistributionComparison result;
    result.n_chunks = static_cast<int>(n_tokens / options.n_ctx);
    ComparisonSums sums;
    std::vector<TokenId> chunk;
    for (int c = 0; c < result.n_chunks; ++c) {
        perplexity_chunk(tokens, options.n_ctx, c, reference.model().tokenizer(), chunk);
        compare_chunk(reference, candidate, chunk, std::max(1, options.n_batch), sums);
        options.progress.report("scoring chunks", c + 1, result.n_chunks);
        if (options.progress.cancelled()) {
            result.cancelled = true;
            result.n_chunks = c + 1;
            break;
        }
    }
    result.reference_ppl = sums.reference.ppl();
    result.reference_ppl_stderr = sums.reference.ppl_stderr();
    result.candidate_ppl = sums.candidate.ppl();
    result.candidate_ppl_stderr = sums.candidate.ppl_stderr();
    result.n_tokens = sums.reference.count;
    double kl_sum = 0.0;
    for (double kl : sums.kl) {
        kl_sum += kl;
        result.kl_max = std::max(result.kl_max, kl);
    }
    result.kl_mean = sums.kl.empty() ? 0.0 : kl_sum / static_cast<double>(sums.kl.size());
    result.kl_p99 = nearest_rank_percentile(std::move(sums.kl), 99.0);
    result.top1_matches = sums.top1_matches;
    result.top1_agreement = result.n_tokens > 0 ? static_cast<double>(sums.top1_matches) / static_cast<double>(result.n_tokens) : 0.0;
    return result;
}

namespace {

// The candidate's argmax at each position that predicts one of `generated`, after reading
// prompt + generated in one teacher-forced pass (in steps of at most 512 tokens).
int count_teacher_forced_matches(InferenceSession& candidate, std::span<const TokenId> prompt,
                                 std::span<const TokenId> generated) {
    std::vector<TokenId> sequence(prompt.begin(), prompt.end());
    sequence.insert(sequence.end(), generated.begin(), generated.end() - 1);
    const auto n_vocab = static_cast<size_t>(candidate.model().config().n_vocab);
    const auto first_predicting = static_cast<int>(prompt.size()) - 1;
    constexpr int kStepTokens = 512;
    ScopedSequence seq(candidate);
    int matches = 0;
    Batch batch;
    for (int start = 0; start < static_cast<int>(sequence.size()); start += kStepTokens) {
        const int end = std::min(static_cast<int>(sequence.size()), start + kStepTokens);
        batch.clear();
        for (int i = start; i < end; ++i) batch.push_back({sequence[static_cast<size_t>(i)], seq.id(), i, i >= first_predicting});
        const std::span<const float> logits = candidate.decode(batch, StepPhase::Prefill);
        size_t row = 0;
        for (int i = start; i < end; ++i) {
            if (i < first_predicting) continue;
            const TokenId expected = generated[static_cast<size_t>(i - first_predicting)];
            matches += argmax(logits.subspan(row * n_vocab, n_vocab)) == expected ? 1 : 0;
            ++row;
        }
    }
    return matches;
}

}  // namespace

AgreementResult greedy_agreement(InferenceSession& reference, InferenceSession& candidate,
                                 std::span<const std::vector<TokenId>> prompts, int n_positions) {
    check_same_vocabulary(reference, candidate);
    if (n_positions < 1) throw InvalidArgument("agreement needs at least 1 position per prompt");
    GenerationOptions greedy;
    greedy.n_predict = n_positions;
    greedy.sampling.temperature = 0.0f;
    greedy.sampling.repeat_penalty = 1.0f;
    greedy.stop_at_end_of_generation = false;
    AgreementResult result;
    for (const std::vector<TokenId>& prompt : prompts) {
        const int64_t needed = static_cast<int64_t>(prompt.size()) + n_positions;
        if (prompt.empty()) throw InvalidArgument("agreement prompt is empty");
        if (needed > reference.context_size() || needed > candidate.context_size()) {
            throw InvalidArgument("agreement: a prompt of " + std::to_string(prompt.size()) + " tokens plus " +
                                  std::to_string(n_positions) + " positions exceeds the context of " +
                                  std::to_string(std::min(reference.context_size(), candidate.context_size())));
        }
        const GenerationResult generated = generate(reference, prompt, greedy);
        const int matches = count_teacher_forced_matches(candidate, prompt, generated.generated);
        result.matches_per_prompt.push_back(matches);
        result.matches += matches;
        result.positions += static_cast<int64_t>(generated.generated.size());
    }
    return result;
}

}  // namespace inferscope
