#pragma once
// Text generation on a session: prefill the prompt, then sample one token per decode step,
// with the KV cache or (for comparison) without it, recomputing the whole sequence.
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/sampler.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;

struct GenerationOptions {
    int n_predict = 128;          // tokens to generate at most
    SamplingParams sampling;
    bool use_kv_cache = true;     // false: recompute every position at every step
    bool reuse_cached_prefix = true;  // start from cached blocks of an earlier identical prompt prefix
    bool stop_at_end_of_generation = true;
    int n_batch = 512;            // prompt tokens per prefill step
};

struct GenerationTimings {
    int n_prompt = 0;
    int n_prompt_cached = 0;         // prompt tokens whose K/V came from the prefix cache
    int n_generated = 0;
    double prefill_ms = 0;           // all prompt steps
    double ttft_ms = 0;              // start until the first generated token is known
    double decode_ms = 0;            // all decode steps (one per generated token, each feeding it back)
    double decode_ms_per_token = 0;  // decode_ms / decode steps
    double tokens_per_s = 0;         // 1000 / decode_ms_per_token
};

struct GenerationResult {
    std::vector<TokenId> generated;
    GenerationTimings timings;
    std::string stop_reason;  // "length", "end of generation", "context full", "cancelled"
};

// Called with each generated token as soon as it is sampled; return false to stop.
using TokenCallback = std::function<bool(TokenId)>;
// Called with each row of logits [n_vocab] a token is sampled from, before sampling (the
// row is valid only during the call): lets an instrument compare two runs' logits.
using LogitsCallback = std::function<void(std::span<const float>)>;

// Generates after `prompt` in a fresh sequence, which is freed afterwards. Throws
// CapacityError when the prompt alone does not fit in the session's context; generation
// stops with "context full" when the sequence reaches it.
GenerationResult generate(InferenceSession& session, std::span<const TokenId> prompt, const GenerationOptions& options,
                          const TokenCallback& on_token = {}, const LogitsCallback& on_logits = {});

}  // namespace inferscope
