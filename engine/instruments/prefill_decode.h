#pragma once
// Prefill vs decode, as tables: prefill cost (total and per token) against the prompt length,
// decode step cost against the cache length, and what users see of them: time to first
// token (the prefill: the first token's logits come out of it) and tokens/s (one per decode
// step). Measured with the bench (engine/bench/bench.h) on random token ids.
#include <vector>

#include "engine/core/progress.h"

namespace inferscope {

class InferenceSession;

struct PhasesOptions {
    std::vector<int> prompt_lengths = {16, 64, 256, 1024};
    std::vector<int> context_lengths = {16, 64, 256, 1024};  // cache lengths before decoding
    int decode_steps = 8;  // tokens decoded after each cache length; the step cost is their mean
    int repetitions = 3;   // timed runs per length, after one warm-up
    int ubatch = 512;      // prompt tokens per forward pass
    // The bench's reports, prefill tests first (stage "pp64", item "run 2/3"); once
    // cancelled, the report is empty.
    Progress progress;
};

struct PrefillRow {
    int n_prompt = 0;
    double total_ms = 0;      // n_prompt x 1000 / the bench's mean tokens/s
    double ms_per_token = 0;  // total_ms / n_prompt
    double ttft_ms = 0;       // time to first token: the prefill (sampling one token excluded)
    double tokens_per_s = 0;  // prompt tokens processed per second, mean over the repetitions
    double tokens_per_s_stddev = 0;  // their sample standard deviation
};

struct DecodeRow {
    int context = 0;          // tokens cached before the first decode step
    double step_ms = 0;       // mean step over decode_steps steps (caches context .. context + steps - 1)
    double tokens_per_s = 0;  // 1000 / step_ms: the generation speed a user sees at this depth
    double tokens_per_s_stddev = 0;  // over the repetitions
};

struct PhasesReport {
    std::vector<PrefillRow> prefill;
    std::vector<DecodeRow> decode;
    bool cancelled = false;
};

// Tokens of context the run needs: the longest prompt, and the deepest cache plus the steps.
int phases_context_needed(const PhasesOptions& options);
// InvalidArgument naming the offending value when a length or count is not positive or the
// run needs more than `max_context` tokens (the model's or the session's context).
void check_phases_options(const PhasesOptions& options, int max_context);

PhasesReport measure_phases(InferenceSession& session, const PhasesOptions& options);

}  // namespace inferscope
