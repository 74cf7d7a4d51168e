// `cache-vs-recompute`: the same greedy generation with the KV cache and without it (every
// step re-runs the whole sequence): per-step time and MACs, attention-score and peak memory,
// the equivalence check, and totals with fitted exponents.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/instruments/cache_vs_recompute.h"

namespace inferscope::cli {
namespace {

struct CacheVsRecomputeOptions {
    ModelOptions model;
    std::string prompt = "Once upon a time";
    int n_predict = 48;
};

// The worked example: one head's scores at n = 4,096 without and with the cache.
constexpr int kScoreExampleContext = 4096;

nlohmann::json cost_json(const PathStepCost& c) {
    return {{"n_tokens", c.n_tokens},
            {"context", c.context},
            {"wall_ms", c.wall_ms},
            {"macs", c.macs.total()},
            {"projection_macs", c.macs.projections},
            {"attention_macs", c.macs.attention},
            {"ffn_macs", c.macs.ffn},
            {"output_head_macs", c.macs.output_head},
            {"score_bytes_per_head", c.score_bytes_per_head},
            {"peak_bytes", c.peak_bytes}};
}

nlohmann::json totals_json(const PathTotals& t) {
    return {{"wall_ms", t.wall_ms},
            {"macs", t.macs},
            {"attention_macs", t.attention_macs},
            {"peak_bytes", t.peak_bytes},
            {"wall_ms_exponent", t.wall_ms_exponent},
            {"macs_exponent", t.macs_exponent},
            {"attention_macs_exponent", t.attention_macs_exponent}};
}

nlohmann::json scaling_json(const GenerationScaling& g) {
    return {{"tokens", g.tokens},
            {"cached_attention_macs", g.cached_attention},
            {"recomputed_attention_macs", g.recomputed_attention},
            {"cached_macs", g.cached_macs},
            {"recomputed_macs", g.recomputed_macs}};
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

nlohmann::json report_json(const Model& model, const CacheVsRecomputeReport& r) {
    nlohmann::json steps = nlohmann::json::array();
    for (const CacheVsRecomputeStep& s : r.steps) {
        steps.push_back({{"step", s.step},
                         {"token_cached", s.token_cached},
                         {"token_recomputed", s.token_recomputed},
                         {"max_abs_logit_diff", s.max_abs_logit_diff},
                         {"cached", cost_json(s.cached)},
                         {"recomputed", cost_json(s.recomputed)}});
    }
    return {{"model", model.config().name},
            {"n_prompt", r.n_prompt},
            {"n_predict", r.steps.size()},
            {"steps", steps},
            {"equivalence",
             {{"tokens_identical", r.tokens_identical},
              {"first_divergent_step", r.first_divergent_step},
              {"max_abs_logit_diff", r.max_abs_logit_diff},
              {"max_abs_logit", r.max_abs_logit}}},
            {"totals",
             {{"cached", totals_json(r.cached)},
              {"recomputed", totals_json(r.recomputed)},
              {"wall_ms_ratio", ratio(r.recomputed.wall_ms, r.cached.wall_ms)},
              {"macs_ratio", ratio(static_cast<double>(r.recomputed.macs), static_cast<double>(r.cached.macs))},
              {"peak_bytes_ratio", ratio(static_cast<double>(r.recomputed.peak_bytes), static_cast<double>(r.cached.peak_bytes))}}},
            {"generation_exponents", {scaling_json(r.scaling_at_run), scaling_json(r.scaling_at_limit)}},
            {"score_bytes_per_head_at_4096",
             {{"recomputed", attention_score_bytes_per_head(kScoreExampleContext, kScoreExampleContext)},
              {"cached", attention_score_bytes_per_head(1, kScoreExampleContext)}}}};
}

void print_table(const CacheVsRecomputeReport& r) {
    std::printf("| step | context | cache ms | recompute ms | cache MACs | recompute MACs | scores/head cache B | scores/head "
                "recompute B | same token | max |dlogit| |\n|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|\n");
    for (const CacheVsRecomputeStep& s : r.steps) {
        std::printf("| %d | %d | %.3f | %.3f | %llu | %llu | %llu | %llu | %s | %.3g |\n", s.step, s.cached.context,
                    s.cached.wall_ms, s.recomputed.wall_ms, static_cast<unsigned long long>(s.cached.macs.total()),
                    static_cast<unsigned long long>(s.recomputed.macs.total()),
                    static_cast<unsigned long long>(s.cached.score_bytes_per_head),
                    static_cast<unsigned long long>(s.recomputed.score_bytes_per_head),
                    s.token_cached == s.token_recomputed ? "yes" : "NO", s.max_abs_logit_diff);
    }
    const auto totals = [](const char* name, const PathTotals& t) {
        std::printf("%-10s total %.2f ms (exponent %.2f), %.4g MACs (exponent %.2f), attention %.4g MACs (exponent %.2f), "
                    "peak %.2f MiB\n",
                    name, t.wall_ms, t.wall_ms_exponent, static_cast<double>(t.macs), t.macs_exponent,
                    static_cast<double>(t.attention_macs), t.attention_macs_exponent,
                    static_cast<double>(t.peak_bytes) / (1024.0 * 1024.0));
    };
    std::printf("\n");
    totals("cache", r.cached);
    totals("recompute", r.recomputed);
    std::printf("recompute / cache: time %.2fx, MACs %.2fx, peak memory %.2fx\n", ratio(r.recomputed.wall_ms, r.cached.wall_ms),
                ratio(static_cast<double>(r.recomputed.macs), static_cast<double>(r.cached.macs)),
                ratio(static_cast<double>(r.recomputed.peak_bytes), static_cast<double>(r.cached.peak_bytes)));
    for (const GenerationScaling& g : {r.scaling_at_run, r.scaling_at_limit}) {
        std::printf("exponents of a %d-token generation (analytic, 1-token prompt): attention %.3f vs %.3f, whole model %.3f "
                    "vs %.3f\n",
                    g.tokens, g.cached_attention, g.recomputed_attention, g.cached_macs, g.recomputed_macs);
    }
    std::printf("equivalence: tokens %s, max |logit difference| %.3g (largest |logit| %.4g)\n",
                r.tokens_identical ? "identical" : ("differ from step " + std::to_string(r.first_divergent_step)).c_str(),
                r.max_abs_logit_diff, r.max_abs_logit);
    std::printf("attention scores of one head at n = %d (fp32): n x n = %llu bytes, 1 x n = %llu bytes\n", kScoreExampleContext,
                static_cast<unsigned long long>(attention_score_bytes_per_head(kScoreExampleContext, kScoreExampleContext)),
                static_cast<unsigned long long>(attention_score_bytes_per_head(1, kScoreExampleContext)));
}

void run(const CacheVsRecomputeOptions& o) {
    const auto model = load_model(o.model);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model, /*op_timestamps=*/false));
    const std::vector<TokenId> prompt = tokenize_prompt(*model, o.prompt);
    const CacheVsRecomputeReport report = run_cache_vs_recompute(session, prompt, o.n_predict);
    if (o.model.json) {
        print_json(report_json(*model, report));
    } else {
        print_table(report);
    }
}

}  // namespace

void add_cache_vs_recompute_command(CLI::App& app) {
    auto o = std::make_shared<CacheVsRecomputeOptions>();
    CLI::App* cmd = app.add_subcommand("cache-vs-recompute",
                                       "greedy generation with and without the KV cache: time, MACs, memory, equivalence");
    add_model_options(*cmd, o->model, true);
    add_prompt_options(*cmd, o->prompt, "prompt text", false);
    cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(positive())->capture_default_str();
    cmd->callback([o] { run(*o); });
}

}  // namespace inferscope::cli
