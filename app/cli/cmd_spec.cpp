// `spec`: speculative decoding measured. A draft (a second GGUF with the same vocabulary,
// or the target under a quantization scheme) proposes --gamma tokens, the target verifies
// them in one pass; plain decoding on the same target (run first) gives the measured cost
// ratio c and the wall-clock speed-up, shown next to the analytic prediction.
#include <cstdio>
#include <string>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "app/cli/quant_cli_common.h"
#include "engine/core/error.h"
#include "engine/speculative/spec_measure.h"
#include "engine/speculative/spec_table.h"
#include "engine/speculative/speculative.h"

namespace inferscope::cli {
namespace {

struct SpecCliOptions {
    ModelOptions model;
    std::string draft_path;
    std::string draft_scheme;
    std::string prompt = "Once upon a time";
    int n_predict = 64;
    int gamma = 4;
    float temperature = 0.0f;
    uint64_t seed = 42;
    bool ignore_eos = false;
};

struct SpecReport {
    std::string target_label;
    std::string draft_label;
    SpeculativeMeasurement measured;
};

nlohmann::json report_json(const SpecCliOptions& o, const SpecReport& r, const Tokenizer& tok) {
    const SpeculativeMeasurement& m = r.measured;
    const SpeculativeStats& s = m.speculative.stats;
    const int gamma = o.gamma;
    return {{"target", r.target_label}, {"draft", r.draft_label}, {"gamma", gamma},
            {"mode", o.temperature > 0 ? "sampling" : "greedy"}, {"temperature", o.temperature}, {"seed", o.seed},
            {"n_prompt", s.n_prompt}, {"n_generated", s.n_generated}, {"stop_reason", m.speculative.stop_reason},
            {"verify_passes", s.verify_passes}, {"proposed", s.proposed}, {"accepted", s.accepted},
            {"acceptance", s.acceptance()}, {"tokens_per_verify", s.tokens_per_verify()},
            {"draft_steps", s.draft_steps}, {"draft_step_ms", s.draft_ms_per_step()},
            {"target_step_ms", m.plain.timings.decode_ms_per_token}, {"verify_pass_ms", s.verify_ms_per_pass()},
            {"cost_ratio", m.cost_ratio}, {"speculative_ms", s.total_ms}, {"plain_ms", m.plain_ms},
            {"speedup", m.speedup},
            {"analytic_tokens_per_verify", expected_tokens_per_verify(s.acceptance(), gamma)},
            {"analytic_speedup", speculative_speedup(s.acceptance(), gamma, m.cost_ratio)},
            {"identical_to_plain", m.identical_to_plain ? nlohmann::json(*m.identical_to_plain) : nlohmann::json(nullptr)},
            {"ids", m.speculative.generated}, {"text", tok.decode(m.speculative.generated)}};
}

void print_report(const SpecCliOptions& o, const SpecReport& r, const Tokenizer& tok) {
    const SpeculativeMeasurement& m = r.measured;
    const SpeculativeStats& s = m.speculative.stats;
    const std::string mode = o.temperature > 0 ? "sampling at T = " + std::to_string(o.temperature) : "greedy";
    std::printf("target %s, draft %s, gamma %d, %s\n", r.target_label.c_str(), r.draft_label.c_str(), o.gamma, mode.c_str());
    std::printf("%s\n\n", tok.decode(m.speculative.generated).c_str());
    std::printf("generated             %d tokens (%s) in %d verify passes\n", s.n_generated, m.speculative.stop_reason.c_str(),
                s.verify_passes);
    std::printf("acceptance alpha      %.4f (%d of %d proposals)\n", s.acceptance(), s.accepted, s.proposed);
    std::printf("tokens per verify     %.3f measured, %.3f analytic for this alpha and gamma\n", s.tokens_per_verify(),
                expected_tokens_per_verify(s.acceptance(), o.gamma));
    std::printf("draft step            %.4f ms (%d steps)\n", s.draft_ms_per_step(), s.draft_steps);
    std::printf("target decode step    %.4f ms (plain decoding)\n", m.plain.timings.decode_ms_per_token);
    std::printf("verify pass           %.4f ms (up to gamma + 1 = %d positions)\n", s.verify_ms_per_pass(), o.gamma + 1);
    std::printf("cost ratio c          %.4f (draft step / target step)\n", m.cost_ratio);
    std::printf("wall, speculative     %.3f ms (prompt in both models included)\n", s.total_ms);
    std::printf("wall, plain decoding  %.3f ms (time to the same number of tokens)\n", m.plain_ms);
    std::printf("speed-up              %.3fx measured, %.3fx analytic ((1 - a^(g+1)) / (1 - a) / (g c + 1))\n",
                m.speedup, speculative_speedup(s.acceptance(), o.gamma, m.cost_ratio));
    if (m.identical_to_plain) std::printf("identical to plain greedy output: %s\n", *m.identical_to_plain ? "yes" : "NO");
}

void run_spec(const SpecCliOptions& o) {
    const auto target_model = load_model(o.model);
    SpecReport r;
    r.target_label = o.model.model_path.empty() ? target_model->config().name : o.model.model_path;
    const CompanionModel draft_choice = companion_model(
        target_model, r.target_label, {o.draft_path, o.draft_scheme, "--draft", "--draft-scheme"}, o.model.threads);
    const std::shared_ptr<const Model>& draft_model = draft_choice.model;
    r.draft_label = draft_choice.label;
    check_same_vocabulary(*target_model, *draft_model);
    InferenceSession target(target_model, session_options(o.model), make_backend(o.model, target_model, /*op_timestamps=*/false));
    InferenceSession draft(draft_model, session_options(o.model), make_backend(o.model, draft_model, /*op_timestamps=*/false));
    warm_up(target, o.gamma + 1);  // a verification wants logits for every proposal and one more
    warm_up(draft);
    const std::vector<TokenId> prompt = tokenize_prompt(*target_model, o.prompt);
    SpeculativeOptions so;
    so.n_predict = o.n_predict;
    so.gamma = o.gamma;
    so.temperature = o.temperature;
    so.seed = o.seed;
    so.stop_at_end_of_generation = !o.ignore_eos;
    so.progress = stderr_progress("spec");
    r.measured = measure_speculative(target, draft, prompt, so);
    if (o.model.json) {
        print_json(report_json(o, r, target_model->tokenizer()));
        return;
    }
    print_report(o, r, target_model->tokenizer());
}

}  // namespace

void add_spec_command(CLI::App& app) {
    auto o = std::make_shared<SpecCliOptions>();
    CLI::App* cmd = app.add_subcommand(
        "spec", "speculative decoding: a draft proposes, the target verifies in one pass; acceptance, cost ratio, speed-up");
    add_model_options(*cmd, o->model, /*with_runtime=*/true);
    cmd->add_option("--draft", o->draft_path, "draft GGUF with the target's vocabulary");
    cmd->add_option("--draft-scheme", o->draft_scheme, "draft = the target under this quantization scheme (e.g. q4_0, int4:g32)");
    add_prompt_options(*cmd, o->prompt, "prompt text", false);
    cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(positive())->capture_default_str();
    cmd->add_option("--gamma", o->gamma, "draft tokens per verify pass")->check(positive())->capture_default_str();
    cmd->add_option("--temp", o->temperature, "temperature; 0: greedy (sampling uses no top-k/top-p/min-p)")
        ->check(non_negative())
        ->capture_default_str();
    cmd->add_option("-s,--seed", o->seed, "sampling seed")->capture_default_str();
    cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating after an end-of-generation token");
    cmd->callback([o] { run_spec(*o); });
}

}  // namespace inferscope::cli
