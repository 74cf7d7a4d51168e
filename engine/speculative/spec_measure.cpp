#include "engine/speculative/spec_measure.h"

#include <algorithm>

#include "engine/runtime/session.h"

namespace inferscope {
namespace {

// The progress bar's halves: plain decoding, then the speculative run.
constexpr double kPlainShare = 0.5;

GenerationResult plain_decoding(InferenceSession& target, std::span<const TokenId> prompt, const SpeculativeOptions& o) {
    GenerationOptions g;
    g.n_predict = o.n_predict;
    g.sampling.temperature = o.temperature;
    g.sampling.top_k = 0;
    g.sampling.top_p = 1.0f;
    g.sampling.min_p = 0.0f;
    g.sampling.seed = o.seed;
    g.reuse_cached_prefix = false;
    g.stop_at_end_of_generation = false;
    const Progress progress = o.progress.share(0, kPlainShare);
    int done = 0;
    return generate(target, prompt, g, [&](TokenId) {
        progress.report("plain decoding", ++done, o.n_predict);
        return !progress.cancelled();
    });
}

// Plain decoding's time until `n_tokens` are known: TTFT + (n - 1) decode steps (generate()
// also feeds the last token back, a step that producing n tokens does not need).
double plain_ms_for(const GenerationTimings& t, int n_tokens) { return t.ttft_ms + t.decode_ms_per_token * (n_tokens - 1); }

}  // namespace

SpeculativeMeasurement measure_speculative(InferenceSession& target, InferenceSession& draft,
                                           std::span<const TokenId> prompt, const SpeculativeOptions& options) {
    // Bad options and vocabularies fail before the plain run rather than after it.
    check_speculative_options(options);
    check_same_vocabulary(target.model(), draft.model());
    SpeculativeMeasurement m;
    m.plain = plain_decoding(target, prompt, options);
    if (m.plain.stop_reason == "cancelled") {
        m.cancelled = true;
        return m;
    }
    SpeculativeOptions o = options;
    o.progress = options.progress.share(kPlainShare, 1);
    m.speculative = speculative_generate(target, draft, prompt, o);
    m.cancelled = m.speculative.stop_reason == "cancelled";
    const std::vector<TokenId>& made = m.speculative.generated;
    m.plain_ms = plain_ms_for(m.plain.timings, static_cast<int>(made.size()));
    const double target_step_ms = m.plain.timings.decode_ms_per_token;
    m.cost_ratio = target_step_ms > 0 ? m.speculative.stats.draft_ms_per_step() / target_step_ms : 0.0;
    m.speedup = m.speculative.stats.total_ms > 0 ? m.plain_ms / m.speculative.stats.total_ms : 0.0;
    if (options.temperature <= 0) {
        const std::vector<TokenId>& plain = m.plain.generated;
        m.identical_to_plain = made.size() <= plain.size() && std::equal(made.begin(), made.end(), plain.begin());
    }
    return m;
}

}  // namespace inferscope
