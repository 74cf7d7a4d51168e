// `phases`: prefill cost against the prompt length and decode step cost against the cache
// length, with the time to first token and tokens/s a user sees.
#include <cstdio>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/instruments/prefill_decode.h"

namespace inferscope::cli {
namespace {

struct PhasesCliOptions {
    ModelOptions model;
    PhasesOptions phases;
};

nlohmann::json report_json(const Model& model, const PhasesOptions& o, const PhasesReport& r) {
    nlohmann::json prefill = nlohmann::json::array();
    for (const PrefillRow& p : r.prefill) {
        prefill.push_back({{"n_prompt", p.n_prompt},
                           {"total_ms", p.total_ms},
                           {"ms_per_token", p.ms_per_token},
                           {"ttft_ms", p.ttft_ms},
                           {"tokens_per_s", p.tokens_per_s}});
    }
    nlohmann::json decode = nlohmann::json::array();
    for (const DecodeRow& d : r.decode) {
        decode.push_back({{"context", d.context}, {"step_ms", d.step_ms}, {"tokens_per_s", d.tokens_per_s}});
    }
    return {{"model", model.config().name},
            {"decode_steps", o.decode_steps},
            {"repetitions", o.repetitions},
            {"prefill", prefill},
            {"decode", decode}};
}

void print_tables(const PhasesReport& r) {
    std::printf("prefill (one pass over the prompt; time to first token = the prefill)\n\n");
    std::printf("| prompt tokens | total ms | ms/token | TTFT ms | prompt tokens/s |\n|---:|---:|---:|---:|---:|\n");
    for (const PrefillRow& p : r.prefill) {
        std::printf("| %d | %.2f | %.3f | %.2f | %.1f |\n", p.n_prompt, p.total_ms, p.ms_per_token, p.ttft_ms, p.tokens_per_s);
    }
    std::printf("\ndecode (one token against a cache of C tokens; tokens/s = 1000 / step ms)\n\n");
    std::printf("| cache tokens C | step ms | tokens/s |\n|---:|---:|---:|\n");
    for (const DecodeRow& d : r.decode) std::printf("| %d | %.3f | %.1f |\n", d.context, d.step_ms, d.tokens_per_s);
}

void run(PhasesCliOptions o) {
    const auto model = load_model(o.model);
    // Refuse before allocating: lengths beyond what the model was trained for.
    check_phases_options(o.phases, model->config().context_length);
    o.model.ctx = phases_context_needed(o.phases);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model, /*op_timestamps=*/false));
    o.phases.progress = stderr_progress("phases");
    const PhasesReport report = measure_phases(session, o.phases);
    if (o.model.json) {
        print_json(report_json(*model, o.phases, report));
    } else {
        print_tables(report);
    }
}

}  // namespace

void add_phases_command(CLI::App& app) {
    auto o = std::make_shared<PhasesCliOptions>();
    CLI::App* cmd = app.add_subcommand("phases", "prefill cost vs prompt length, decode step cost vs cache length");
    add_model_options(*cmd, o->model, true, /*with_context=*/false);
    cmd->add_option("--prompt", o->phases.prompt_lengths, "prompt lengths in tokens")->delimiter(',')->capture_default_str();
    cmd->add_option("--context", o->phases.context_lengths, "cache lengths in tokens before decoding")
        ->delimiter(',')
        ->capture_default_str();
    cmd->add_option("--decode-steps", o->phases.decode_steps, "decode steps averaged at each cache length")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("-r,--repetitions", o->phases.repetitions, "timed runs per length (after one warm-up)")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("--ubatch", o->phases.ubatch, "prompt tokens per forward pass")->check(positive())->capture_default_str();
    cmd->callback([o] { run(*o); });
}

}  // namespace inferscope::cli
