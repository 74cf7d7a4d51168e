#pragma once
// Speculative decoding measured against plain decoding on the same target. Plain decoding
// (pure temperature sampling with the same seed, never stopping at end of generation) runs
// first, so that the speculative run does not find the target's weights warmer than plain
// decoding did; its decode step prices the cost ratio c = draft step / target step, and its
// time to as many tokens as the speculative run made gives the real speed-up.
#include <functional>
#include <optional>
#include <span>
#include <string_view>

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
    bool cancelled = false;  // stopped by the progress callback; the numbers are then partial
};

// (stage: "plain decoding" or "speculative decoding", tokens done, tokens to make); return
// false to cancel at the next token (plain) or verify round (speculative).
using SpeculativeProgress = std::function<bool(std::string_view, int, int)>;

// Plain decoding, then speculative_generate with `options` (whose on_round is still called),
// each in a fresh sequence of its session. Errors as speculative_generate's.
SpeculativeMeasurement measure_speculative(InferenceSession& target, InferenceSession& draft,
                                           std::span<const TokenId> prompt, const SpeculativeOptions& options,
                                           const SpeculativeProgress& on_progress = {});

}  // namespace inferscope
