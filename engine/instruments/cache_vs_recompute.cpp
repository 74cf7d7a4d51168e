#include "engine/instruments/cache_vs_recompute.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

// Records the session's step events for as long as it lives.
class StepRecorder {
public:
    explicit StepRecorder(InferenceSession& session)
        : session_(session), id_(session.add_step_observer([this](const StepEvent& e) { events_.push_back(e); })) {}
    ~StepRecorder() { session_.remove_step_observer(id_); }
    StepRecorder(const StepRecorder&) = delete;
    StepRecorder& operator=(const StepRecorder&) = delete;
    const std::vector<StepEvent>& events() const { return events_; }

private:
    InferenceSession& session_;
    int id_;
    std::vector<StepEvent> events_;
};

struct PathRun {
    std::vector<TokenId> tokens;
    std::vector<PathStepCost> costs;  // [n_predict], step s at index s - 1
};

PathStepCost step_cost(const InferenceSession& session, const StepEvent& e) {
    const ModelConfig& config = session.model().config();
    const int n_past = e.context_length - e.n_tokens;
    PathStepCost c;
    c.n_tokens = e.n_tokens;
    c.context = e.context_length;
    c.wall_ms = static_cast<double>(e.wall_ns) / 1e6;
    c.macs = forward_macs(config, n_past, e.n_tokens, 1);
    c.score_bytes_per_head = attention_score_bytes_per_head(e.n_tokens, e.context_length);
    c.peak_bytes =
        forward_peak_memory(config, n_past, e.n_tokens, 1, kv_dtype_bytes(session.kv_cache().layout().dtype())).total();
    return c;
}

// One greedy generation. With n_batch = the context, the prompt is one prefill pass and each
// step one pass, so the events are [prefill, decode 1, ..., decode n]: the prefill produced
// token 1, decode k token k + 1, and the last decode (which feeds token n back) is not needed.
PathRun run_path(InferenceSession& session, std::span<const TokenId> prompt, int n_predict, bool use_cache,
                 const LogitsCallback& on_logits) {
    GenerationOptions g;
    g.n_predict = n_predict;
    g.sampling.temperature = 0.0f;
    g.use_kv_cache = use_cache;
    g.reuse_cached_prefix = false;
    g.stop_at_end_of_generation = false;
    g.n_batch = session.context_size();
    StepRecorder recorder(session);
    PathRun run;
    run.tokens = generate(session, prompt, g, {}, on_logits).generated;
    const std::vector<StepEvent>& events = recorder.events();
    if (run.tokens.size() != static_cast<size_t>(n_predict) || events.size() != static_cast<size_t>(n_predict) + 1) {
        throw Error("cache vs recompute: expected " + std::to_string(n_predict) + " tokens and " +
                    std::to_string(n_predict + 1) + " forward passes, got " + std::to_string(run.tokens.size()) + " and " +
                    std::to_string(events.size()));
    }
    for (int s = 0; s < n_predict; ++s) run.costs.push_back(step_cost(session, events[static_cast<size_t>(s)]));
    return run;
}

double max_abs_difference(std::span<const float> a, std::span<const float> b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(a[i]) - b[i]));
    return worst;
}

double max_abs(std::span<const float> row) {
    double largest = 0;
    for (float x : row) largest = std::max(largest, std::abs(static_cast<double>(x)));
    return largest;
}

}  // namespace

double fitted_exponent(std::span<const double> x, std::span<const double> y) {
    if (x.size() != y.size() || x.size() < 2) throw InvalidArgument("a power-law fit needs two or more (x, y) pairs");
    double mean_x = 0, mean_y = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        if (x[i] <= 0 || y[i] <= 0) throw InvalidArgument("a power-law fit needs positive values");
        mean_x += std::log(x[i]);
        mean_y += std::log(y[i]);
    }
    const auto n = static_cast<double>(x.size());
    mean_x /= n;
    mean_y /= n;
    double sxy = 0, sxx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double dx = std::log(x[i]) - mean_x;
        sxy += dx * (std::log(y[i]) - mean_y);
        sxx += dx * dx;
    }
    if (sxx == 0) throw InvalidArgument("a power-law fit needs distinct x values");
    return sxy / sxx;
}

PathTotals path_totals(std::span<const PathStepCost> steps) {
    PathTotals t;
    std::vector<double> tokens, wall, macs, attention;  // [T] cumulative over steps 1..T
    for (size_t i = 0; i < steps.size(); ++i) {
        t.wall_ms += steps[i].wall_ms;
        t.macs += steps[i].macs.total();
        t.attention_macs += steps[i].macs.attention;
        t.peak_bytes = std::max(t.peak_bytes, steps[i].peak_bytes);
        tokens.push_back(static_cast<double>(i + 1));
        wall.push_back(t.wall_ms);
        macs.push_back(static_cast<double>(t.macs));
        attention.push_back(static_cast<double>(t.attention_macs));
    }
    if (steps.size() >= 2) {
        t.macs_exponent = fitted_exponent(tokens, macs);
        t.attention_macs_exponent = fitted_exponent(tokens, attention);
        // A timer can read 0 ms for a tiny model's first step; the fit needs positive totals.
        if (wall.front() > 0) t.wall_ms_exponent = fitted_exponent(tokens, wall);
    }
    return t;
}

GenerationScaling generation_scaling(const ModelConfig& config, int tokens) {
    if (tokens < 1) throw InvalidArgument("generation scaling needs at least one token");
    // MACs summed over the steps so far (double: the recomputed total overflows 64 bits at large T).
    struct Totals {
        double cached_attention = 0, recomputed_attention = 0, cached = 0, recomputed = 0;
    };
    Totals sum, at_t;
    for (int s = 1; s <= 2 * tokens; ++s) {
        const ForwardMacs cached = forward_macs(config, s - 1, 1, 1);
        const ForwardMacs recomputed = forward_macs(config, 0, s, 1);
        sum.cached_attention += static_cast<double>(cached.attention);
        sum.recomputed_attention += static_cast<double>(recomputed.attention);
        sum.cached += static_cast<double>(cached.total());
        sum.recomputed += static_cast<double>(recomputed.total());
        if (s == tokens) at_t = sum;
    }
    return {tokens, std::log2(sum.cached_attention / at_t.cached_attention),
            std::log2(sum.recomputed_attention / at_t.recomputed_attention), std::log2(sum.cached / at_t.cached),
            std::log2(sum.recomputed / at_t.recomputed)};
}

CacheVsRecomputeReport run_cache_vs_recompute(InferenceSession& session, std::span<const TokenId> prompt, int n_predict) {
    if (prompt.empty()) throw InvalidArgument("the prompt is empty: at least one token is needed");
    if (n_predict < 1) throw InvalidArgument("cache vs recompute needs at least one token to generate (-n)");
    const size_t needed = prompt.size() + static_cast<size_t>(n_predict);
    if (needed > static_cast<size_t>(session.context_size())) {
        throw CapacityError("cache vs recompute needs " + std::to_string(needed) + " tokens of context (" +
                            std::to_string(prompt.size()) + " prompt + " + std::to_string(n_predict) +
                            " generated); the session has " + std::to_string(session.context_size()) +
                            " (raise -c, lower -n or shorten the prompt)");
    }
    {
        // One untimed pass first, so that the path run first does not also pay for paging
        // the weights in.
        ScopedSequence warm_up(session);
        const Batch first = {{prompt[0], warm_up.id(), 0, true}};
        session.decode(first);
    }
    std::vector<std::vector<float>> cached_logits;  // [n_predict][n_vocab]
    const PathRun cached = run_path(session, prompt, n_predict, true, [&cached_logits](std::span<const float> row) {
        cached_logits.emplace_back(row.begin(), row.end());
    });
    std::vector<double> logit_diffs, logit_scales;  // [n_predict]
    const PathRun recomputed = run_path(session, prompt, n_predict, false, [&](std::span<const float> row) {
        const std::vector<float>& cached_row = cached_logits.at(logit_diffs.size());
        logit_diffs.push_back(max_abs_difference(row, cached_row));
        logit_scales.push_back(max_abs(cached_row));
    });

    CacheVsRecomputeReport report;
    report.n_prompt = static_cast<int>(prompt.size());
    for (int s = 0; s < n_predict; ++s) {
        const auto i = static_cast<size_t>(s);
        report.steps.push_back({s + 1, cached.tokens[i], recomputed.tokens[i], logit_diffs[i], cached.costs[i],
                                recomputed.costs[i]});
        // Up to the first divergence both rows were computed from the same tokens.
        if (report.first_divergent_step == 0) {
            report.max_abs_logit_diff = std::max(report.max_abs_logit_diff, logit_diffs[i]);
            report.max_abs_logit = std::max(report.max_abs_logit, logit_scales[i]);
        }
        if (report.first_divergent_step == 0 && cached.tokens[i] != recomputed.tokens[i]) report.first_divergent_step = s + 1;
    }
    report.tokens_identical = report.first_divergent_step == 0;
    report.cached = path_totals(cached.costs);
    report.recomputed = path_totals(recomputed.costs);
    report.scaling_at_run = generation_scaling(session.model().config(), n_predict);
    report.scaling_at_limit = generation_scaling(session.model().config(), kScalingLimitTokens);
    return report;
}

}  // namespace inferscope
