#pragma once
// Speculative decoding (Leviathan et al. 2023; Chen et al. 2023). A cheap draft model
// proposes gamma tokens one at a time; the target scores all of them in ONE forward pass
// of gamma + 1 positions of its sequence; a prefix of the proposals is kept, plus one token
// of the target's own, and the positions of rejected proposals are truncated from both KV
// caches.
//
// Greedy (temperature <= 0): a proposal is kept while it equals the target's argmax, so the
// output is exactly the target's greedy output. Sampling (temperature T > 0, plain
// temperature sampling: no top-k/top-p/min-p): proposal x drawn from q = softmax(draft/T)
// is kept with probability min(1, p(x)/q(x)), p = softmax(target/T); at the first rejection
// the token is drawn from norm(max(0, p - q)); after gamma acceptances a bonus token is drawn
// from p. Each emitted token is then distributed exactly as a sample from p.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;
class Model;

struct SpeculativeOptions {
    int n_predict = 64;         // tokens to generate at most
    int gamma = 4;              // draft proposals per verify pass (fewer only near the context end)
    float temperature = 0.0f;   // <= 0: greedy
    uint64_t seed = 42;
    bool stop_at_end_of_generation = true;
    // Reported after each verify round (stage "speculative decoding", tokens generated of
    // n_predict); once cancelled, the run stops there with stop reason "cancelled".
    Progress progress;
};

struct SpeculativeStats {
    int n_prompt = 0;
    int n_generated = 0;
    int verify_passes = 0;     // target forward passes after the prompt
    int proposed = 0;          // draft tokens scored by the target
    int accepted = 0;          // of those, kept
    int emitted = 0;           // tokens the verify passes produced, before trimming to n_predict
    int draft_steps = 0;       // draft forward passes after the prompt
    double prefill_ms = 0;     // both prompts
    double draft_ms = 0;       // all draft steps
    double verify_ms = 0;      // all verify passes
    double total_ms = 0;       // start until the last token is known

    double acceptance() const { return proposed > 0 ? static_cast<double>(accepted) / proposed : 0.0; }
    double tokens_per_verify() const { return verify_passes > 0 ? static_cast<double>(emitted) / verify_passes : 0.0; }
    double draft_ms_per_step() const { return draft_steps > 0 ? draft_ms / draft_steps : 0.0; }
    double verify_ms_per_pass() const { return verify_passes > 0 ? verify_ms / verify_passes : 0.0; }
};

struct SpeculativeResult {
    std::vector<TokenId> generated;
    SpeculativeStats stats;
    std::string stop_reason;  // "length", "end of generation", "context full", "cancelled"
};

// InvalidArgument naming the bad option (gamma below 1, a negative token count, a
// non-finite temperature).
void check_speculative_options(const SpeculativeOptions& options);

// InvalidArgument naming the first difference unless both models have the same vocabulary
// (logit rows of the same length, the same token strings).
void check_same_vocabulary(const Model& target, const Model& draft);

// Generates after `prompt` with `draft` proposing and `target` verifying, each in a fresh
// sequence of its own session, freed afterwards. InvalidArgument for bad options, an empty
// prompt or different vocabularies; CapacityError when the prompt does not fit a context.
SpeculativeResult speculative_generate(InferenceSession& target, InferenceSession& draft,
                                       std::span<const TokenId> prompt, const SpeculativeOptions& options);

// One verify decision. `draft` holds the k proposals; accepted counts the kept prefix and
// next is the token that follows it (the target's correction or its bonus token).
struct VerifyOutcome {
    int accepted = 0;
    TokenId next = 0;
};

// Greedy: target_logits [(k + 1) x n_vocab], row i the target's logits after proposal i - 1.
VerifyOutcome verify_greedy(std::span<const float> target_logits, std::span<const TokenId> draft);

// Sampling: target_probs [(k + 1) x n_vocab] (p per row), draft_probs [k x n_vocab] (the q
// each proposal was drawn from).
VerifyOutcome verify_sampled(std::span<const double> target_probs, std::span<const double> draft_probs,
                             std::span<const TokenId> draft, std::mt19937_64& rng);

}  // namespace inferscope
