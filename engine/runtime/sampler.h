#pragma once
// Token sampling: repetition penalty, then top-k, top-p and min-p filtering on the
// untempered distribution, then temperature, then a draw from a seeded generator (the
// order of llama.cpp's default sampler chain). Temperature <= 0 means greedy.
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

struct SamplingParams {
    float temperature = 0.8f;   // <= 0: greedy (argmax, ties to the lowest id)
    int top_k = 40;             // <= 0: off
    float top_p = 0.95f;        // >= 1: off
    float min_p = 0.05f;        // <= 0: off
    float repeat_penalty = 1.0f;  // 1: off
    int repeat_last_n = 64;     // tokens of history the penalty looks at
    uint64_t seed = 42;
};

// Throws Error naming the first NaN or infinite logit: sampling from it would pick token 0
// (or any) forever without a word.
void require_finite_logits(std::span<const float> logits);

class Sampler {
public:
    explicit Sampler(const SamplingParams& params);

    // Picks the next token from one row of logits; `history` is the sequence so far
    // (prompt and generated tokens), used by the repetition penalty.
    TokenId sample(std::span<const float> logits, std::span<const TokenId> history);

    const SamplingParams& params() const { return params_; }

private:
    struct Candidate {
        TokenId id;
        float logit;
        float p;
    };
    // `logits` after the repetition penalty: the row itself when the penalty is off, else a
    // penalized copy that the sampler holds.
    std::span<const float> penalized(std::span<const float> logits, std::span<const TokenId> history);
    // Fills candidates_ with the tokens top-k keeps (all of them when top-k is off), unsorted.
    void gather_candidates(std::span<const float> scores);
    void truncate(std::vector<Candidate>& candidates) const;
    // The order candidates are ranked in: higher logit first, the lower id among equals.
    static bool ranks_above(const Candidate& a, const Candidate& b);

    SamplingParams params_;
    std::mt19937_64 rng_;
    std::vector<Candidate> candidates_;
    std::vector<float> penalized_;
};

// The model's log-probabilities around one token: log-softmax of the raw logits, before the
// sampler's penalty, filters and temperature (what vLLM reports by default).
struct TokenLogprobs {
    float logprob = 0;                           // of the token
    std::vector<std::pair<TokenId, float>> top;  // the k most probable, descending (ties: lower id first)
};
// InvalidArgument unless 0 <= top_k <= n_vocab and the token is in the row.
TokenLogprobs token_logprobs(std::span<const float> logits, TokenId token, int top_k);

// Index of the largest logit, the lowest index among equals.
TokenId argmax(std::span<const float> logits);

// softmax(logits / temperature) in double [n_vocab]: the distribution plain temperature
// sampling (no top-k/top-p/min-p) draws from. InvalidArgument unless temperature > 0.
std::vector<double> softmax_at_temperature(std::span<const float> logits, double temperature);

}  // namespace inferscope
