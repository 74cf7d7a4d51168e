#pragma once
// Speculative decoding measured against plain decoding on the same target. Plain decoding
// (pure temperature sampling with the same seed, never stopping at end of generation) runs
// first, so that the speculative run does not find the target's weights warmer than plain
// decoding did; its decode step prices the cost ratio c = draft step / target step, and its
// time to as many tokens as the speculative run made gives the real speed-up.
#include <optional>
#include <span>

#include "engine/runtime/generator.h"
#include "engine/speculative/speculative.h"

namespace inferscope {

struct SpeculativeMeasurement {
    SpeculativeResult speculative;
    GenerationResult plain;
    double plain_ms = 0;    // plain decoding's time to as many tokens as the speculative run made
    double cost_ratio = 0;  // draft step ms / plain decoding's target decode step ms
    double speedup = 0;     // plain_ms / the speculative run's wall ms
    // Greedy only: whether the speculative tokens are a prefix of plain decoding's (they
    // must be: plain decoding does not stop at end of generation).
    std::optional<bool> identical_to_plain;
    bool cancelled = false;  // stopped through options.progress; the numbers are then partial
};

// Plain decoding, then speculative_generate with `options`, each in a fresh sequence of its
// session. options.progress covers both halves: stage "plain decoding" (tokens made of
// n_predict; cancelled at the next token), then "speculative decoding" (cancelled at the
// next verify round). Errors as speculative_generate's.
SpeculativeMeasurement measure_speculative(InferenceSession& target, InferenceSession& draft,
                                           std::span<const TokenId> prompt, const SpeculativeOptions& options);

}  // namespace inferscope
