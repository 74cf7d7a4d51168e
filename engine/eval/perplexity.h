#pragma once
// Perplexity with llama.cpp's llama-perplexity method: the text (tokenized once, BOS
// prepended when the vocabulary adds one) is cut into floor(n_tokens / n_ctx) chunks; each
// chunk starts from an empty cache with its first token replaced by BOS; only the second
// half of each chunk is scored (logits at positions n_ctx/2 .. n_ctx-2 predict the next
// token). PPL = exp(mean NLL); the error is PPL x the standard error of the mean NLL.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/progress.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;

struct PerplexityOptions {
    int n_ctx = 512;    // chunk length (llama-perplexity's -c)
    int n_batch = 512;  // tokens per forward step within a chunk
    // Reported after each chunk (stage "scoring chunks"); once cancelled, the result covers
    // the chunks done. The running PPL is in the result.
    Progress progress;
};

struct PerplexityResult {
    double ppl = 0;
    double ppl_stderr = 0;
    int64_t n_tokens_scored = 0;
    int n_chunks = 0;
    std::vector<double> running_ppl;  // after each chunk, as llama-perplexity prints it
    bool cancelled = false;
};

// The pieces of the method, shared with side-by-side comparisons (engine/eval/quality.h).
// -log softmax(logits)[target], with the exponentials summed in double as llama.cpp does.
double negative_log_likelihood(std::span<const float> logits, TokenId target);

// Running sums of per-token NLL: PPL = exp(mean) and its standard error.
struct NllAccumulator {
    double nll = 0;
    double nll_squared = 0;
    int64_t count = 0;

    void add(double value);
    double ppl() const;
    double ppl_stderr() const;
};

// Throws InvalidArgument unless 4 <= n_ctx <= context_size and tokens >= 2 x n_ctx.
void check_perplexity_input(int64_t n_tokens, int n_ctx, int context_size);
// Chunk `index` of the text: tokens [index x n_ctx, (index + 1) x n_ctx), its first token
// replaced by BOS when the vocabulary adds one.
void perplexity_chunk(std::span<const TokenId> tokens, int n_ctx, int index, const Tokenizer& tokenizer,
                      std::vector<TokenId>& chunk);

// `tokens` is the tokenized text, BOS included when the vocabulary adds one. Throws
// InvalidArgument when there are fewer than 2 x n_ctx tokens (llama-perplexity's rule) or
// the session's context is smaller than n_ctx.
PerplexityResult compute_perplexity(InferenceSession& session, std::span<const TokenId> tokens,
                                    const PerplexityOptions& options);

}  // namespace inferscope
