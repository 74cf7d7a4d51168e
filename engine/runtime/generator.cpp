#include "engine/runtime/generator.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Feeds `tokens` to the sequence in chunks of n_batch and returns the logits of the last one.
std::span<const float> feed(InferenceSession& session, SeqId seq, std::span<const TokenId> tokens, int n_batch,
                            StepPhase phase) {
    std::span<const float> logits;
    Batch batch;
    const auto n = static_cast<int>(tokens.size());
    for (int start = 0; start < n; start += n_batch) {
        const int end = std::min(n, start + n_batch);
        batch.clear();
        const int first_pos = session.sequence_length(seq);
        for (int i = start; i < end; ++i) {
            batch.push_back({tokens[static_cast<size_t>(i)], seq, first_pos + (i - start), i == n - 1});
        }
        logits = session.decode(batch, phase);
    }
    return logits;
}

}  // namespace

GenerationResult generate(InferenceSession& session, std::span<const TokenId> prompt, const GenerationOptions& options,
                          const TokenCallback& on_token, const LogitsCallback& on_logits) {
    if (prompt.empty()) throw InvalidArgument("the prompt is empty: at least one token is needed");
    if (options.n_batch <= 0) throw InvalidArgument("batch size must be positive");
    if (static_cast<int>(prompt.size()) > session.context_size()) {
        throw CapacityError("the prompt has " + std::to_string(prompt.size()) + " tokens, more than the context size of " +
                            std::to_string(session.context_size()) + " tokens (raise -c or shorten the prompt)");
    }
    const Tokenizer& tokenizer = session.model().tokenizer();
    GenerationResult result;
    result.stop_reason = "length";
    result.timings.n_prompt = static_cast<int>(prompt.size());
    Sampler sampler(options.sampling);
    std::vector<TokenId> history(prompt.begin(), prompt.end());
    ScopedSequence seq(session);

    const auto start = Clock::now();
    const int cached = options.use_kv_cache && options.reuse_cached_prefix ? session.attach_cached_prefix(seq.id(), prompt) : 0;
    result.timings.n_prompt_cached = cached;
    std::span<const float> logits =
        feed(session, seq.id(), prompt.subspan(static_cast<size_t>(cached)), options.n_batch, StepPhase::Prefill);
    result.timings.prefill_ms = ms_since(start);
    int decode_steps = 0;
    double decode_ms = 0;

    // Every generated token is fed back, the last one included, so that the cache ends up
    // holding the whole sequence (a follow-up can continue from it) and each generated token
    // has its own decode step.
    while (static_cast<int>(result.generated.size()) < options.n_predict) {
        if (on_logits) on_logits(logits);
        const TokenId token = sampler.sample(logits, history);
        if (result.generated.empty()) result.timings.ttft_ms = ms_since(start);
        result.generated.push_back(token);
        history.push_back(token);
        if (on_token && !on_token(token)) {
            result.stop_reason = "cancelled";
            break;
        }
        if (static_cast<int>(history.size()) > session.context_size()) {
            result.stop_reason = "context full";
            break;
        }
        const auto step_start = Clock::now();
        if (options.use_kv_cache) {
            logits = feed(session, seq.id(), std::span<const TokenId>(&history.back(), 1), 1, StepPhase::Decode);
        } else {
            seq.reset();
            logits = feed(session, seq.id(), history, options.n_batch, StepPhase::Decode);
        }
        decode_ms += ms_since(step_start);
        ++decode_steps;
        if (options.stop_at_end_of_generation && tokenizer.is_end_of_generation(token)) {
            result.stop_reason = "end of generation";
            break;
        }
    }
    result.timings.n_generated = static_cast<int>(result.generated.size());
    result.timings.decode_ms = decode_ms;
    if (decode_steps > 0) {
        result.timings.decode_ms_per_token = decode_ms / decode_steps;
        result.timings.tokens_per_s = result.timings.decode_ms_per_token > 0 ? 1000.0 / result.timings.decode_ms_per_token : 0;
    }
    return result;
}

}  // namespace inferscope
