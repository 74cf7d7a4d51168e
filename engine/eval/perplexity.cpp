#include "engine/eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

// Runs one chunk in a fresh sequence and adds the NLL of its scored second half.
void score_chunk(InferenceSession& session, std::span<const TokenId> chunk, int n_batch, NllAccumulator& acc) {
    const int n_ctx = static_cast<int>(chunk.size());
    const int first_scored = n_ctx / 2;
    const SeqId seq = session.new_sequence();
    const int n_vocab = session.model().config().n_vocab;
    try {
        Batch batch;
        for (int start = 0; start < n_ctx; start += n_batch) {
            const int end = std::min(n_ctx, start + n_batch);
            batch.clear();
            for (int i = start; i < end; ++i) {
                batch.push_back({chunk[static_cast<size_t>(i)], seq, i, i >= first_scored && i < n_ctx - 1});
            }
            const std::span<const float> logits = session.decode(batch, StepPhase::Prefill);
            require_finite_logits(logits);  // a NaN would make the perplexity "nan", not an error
            int row = 0;
            for (int i = start; i < end; ++i) {
                if (!batch[static_cast<size_t>(i - start)].output) continue;
                acc.add(negative_log_likelihood(logits.subspan(static_cast<size_t>(row) * static_cast<size_t>(n_vocab),
                                                               static_cast<size_t>(n_vocab)),
                                                chunk[static_cast<size_t>(i + 1)]));
                ++row;
            }
        }
    } catch (...) {
        session.free_sequence(seq);
        throw;
    }
    session.free_sequence(seq);
}

}  // namespace

double negative_log_likelihood(std::span<const float> logits, TokenId target) {
    const float max_logit = *std::max_element(logits.begin(), logits.end());
    double sum_exp = 0.0;
    for (float logit : logits) sum_exp += std::exp(logit - max_logit);
    return -(static_cast<double>(logits[static_cast<size_t>(target)] - max_logit) - std::log(sum_exp));
}

void NllAccumulator::add(double value) {
    nll += value;
    nll_squared += value * value;
    ++count;
}

double NllAccumulator::ppl() const { return std::exp(nll / static_cast<double>(count)); }

double NllAccumulator::ppl_stderr() const {
    const double mean = nll / static_cast<double>(count);
    const double variance = nll_squared / static_cast<double>(count) - mean * mean;
    return variance > 0 && count > 1 ? ppl() * std::sqrt(variance / static_cast<double>(count - 1)) : 0.0;
}

void check_perplexity_input(int64_t n_tokens, int n_ctx, int context_size) {
    if (n_ctx < 4) throw InvalidArgument("perplexity context must be at least 4 tokens");
    if (n_ctx > context_size) {
        throw InvalidArgument("perplexity context " + std::to_string(n_ctx) + " exceeds the session's context of " +
                              std::to_string(context_size) + " tokens");
    }
    if (n_tokens < 2 * static_cast<int64_t>(n_ctx)) {
        throw InvalidArgument("the text has " + std::to_string(n_tokens) + " tokens; perplexity with -c " +
                              std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx));
    }
}

void perplexity_chunk(std::span<const TokenId> tokens, int n_ctx, int index, const Tokenizer& tokenizer,
                      std::vector<TokenId>& chunk) {
    const auto begin = tokens.begin() + static_cast<std::ptrdiff_t>(index) * n_ctx;
    chunk.assign(begin, begin + n_ctx);
    if (tokenizer.add_bos() && tokenizer.bos_id() >= 0) chunk[0] = tokenizer.bos_id();
}

PerplexityResult compute_perplexity(InferenceSession& session, std::span<const TokenId> tokens,
                                    const PerplexityOptions& options) {
    const int n_ctx = options.n_ctx;
    check_perplexity_input(static_cast<int64_t>(tokens.size()), n_ctx, session.context_size());
    const Tokenizer& tokenizer = session.model().tokenizer();

    PerplexityResult result;
    result.n_chunks = static_cast<int>(tokens.size() / static_cast<size_t>(n_ctx));
    NllAccumulator acc;
    std::vector<TokenId> chunk;
    for (int c = 0; c < result.n_chunks; ++c) {
        perplexity_chunk(tokens, n_ctx, c, tokenizer, chunk);
        score_chunk(session, chunk, std::max(1, options.n_batch), acc);
        result.running_ppl.push_back(acc.ppl());
        options.progress.report("scoring chunks", c + 1, result.n_chunks);
        if (options.progress.cancelled()) {
            result.cancelled = true;
            break;
        }
    }
    result.ppl = acc.ppl();
    result.ppl_stderr = acc.ppl_stderr();
    result.n_tokens_scored = acc.count;
    return result;
}

}  // namespace inferscope
