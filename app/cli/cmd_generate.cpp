// `generate`: prompt -> tokens, streamed, with timings and (optionally) every step event.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/runtime/generator.h"

namespace inferscope::cli {
namespace {

struct GenerateOptions {
    ModelOptions model;
    std::string prompt = "Once upon a time";
    int n_predict = 64;
    int n_batch = 512;
    SamplingParams sampling;
    bool no_cache = false;
    bool ignore_eos = false;
    std::string steps_path;
};

nlohmann::json step_json(const StepEvent& e) {
    nlohmann::json j = {{"step", e.step},
            {"phase", step_phase_name(e.phase)},
            {"n_tokens", e.n_tokens},
            {"n_sequences", e.n_sequences},
            {"context_length", e.context_length},
            {"wall_ns", e.wall_ns},
            {"kv_bytes_in_use", e.kv_bytes_in_use},
            {"kv_bytes_reserved", e.kv_bytes_reserved}};
    if (!e.gpu_ops.empty()) {
        j["gpu_ns"] = e.gpu_ns;
        nlohmann::json ops = nlohmann::json::object();
        for (const OpTime& op : e.gpu_ops) ops[op.op] = op.gpu_ns;
        j["gpu_op_ns"] = ops;
    }
    return j;
}

void run_generate(const GenerateOptions& o) {
    const auto model = load_model(o.model);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model));
    const Tokenizer& tok = model->tokenizer();
    const std::vector<TokenId> prompt = tokenize_prompt(*model, o.prompt);

    std::ofstream steps;
    if (!o.steps_path.empty()) {
        steps.open(o.steps_path, std::ios::trunc);
        if (!steps) throw Error(o.steps_path + ": cannot open for writing");
        session.add_step_observer([&steps](const StepEvent& e) { steps << step_json(e).dump() << '\n' << std::flush; });
    }

    GenerationOptions g;
    g.n_predict = o.n_predict;
    g.n_batch = o.n_batch;
    g.sampling = o.sampling;
    g.use_kv_cache = !o.no_cache;
    g.stop_at_end_of_generation = !o.ignore_eos;

    std::string text;
    if (!o.model.json) {
        for (TokenId id : prompt) std::cout << tok.token_to_piece(id);
        std::cout << std::flush;
    }
    const GenerationResult result = generate(session, prompt, g, [&](TokenId id) {
        const std::string piece = tok.token_to_piece(id);
        text += piece;
        if (!o.model.json) std::cout << piece << std::flush;
        return true;
    });
    const GenerationTimings& t = result.timings;
    if (o.model.json) {
        print_json({{"prompt_ids", prompt},
                    {"generated_ids", result.generated},
                    {"text", text},
                    {"stop_reason", result.stop_reason},
                    {"kv_cache", !o.no_cache},
                    {"timings",
                     {{"prefill_ms", t.prefill_ms},
                      {"decode_ms_per_token", t.decode_ms_per_token},
                      {"ttft_ms", t.ttft_ms},
                      {"tokens_per_s", t.tokens_per_s}}}});
        return;
    }
    std::cout << std::endl;
    std::fprintf(stderr,
                 "\n%s, %s cache\nprompt: %d tokens, prefill %.2f ms (%.2f ms/token), time to first token "
                 "%.2f ms\ndecode: %d tokens, %.2f ms/token, %.2f tokens/s (stop: %s)\n",
                 session.backend().name().c_str(), o.no_cache ? "no" : "KV", t.n_prompt,
                 t.prefill_ms, t.prefill_ms / std::max(1, t.n_prompt), t.ttft_ms, t.n_generated, t.decode_ms_per_token,
                 t.tokens_per_s, result.stop_reason.c_str());
}

}  // namespace

void add_generate_command(CLI::App& app) {
    auto o = std::make_shared<GenerateOptions>();
    CLI::App* cmd = app.add_subcommand("generate", "generate text from a prompt");
    add_model_options(*cmd, o->model, true);
    cmd->add_option("-p,--prompt", o->prompt, "prompt text")->capture_default_str();
    cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("-b,--batch-size", o->n_batch, "prompt tokens per prefill step")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--temp", o->sampling.temperature, "temperature (0: greedy)")->capture_default_str();
    cmd->add_option("--top-k", o->sampling.top_k, "top-k (0: off)")->capture_default_str();
    cmd->add_option("--top-p", o->sampling.top_p, "top-p (1: off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
    cmd->add_option("--min-p", o->sampling.min_p, "min-p (0: off)")->check(CLI::Range(0.0, 1.0))->capture_default_str();
    cmd->add_option("--repeat-penalty", o->sampling.repeat_penalty, "repetition penalty (1: off)")
        ->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--repeat-last-n", o->sampling.repeat_last_n, "tokens the penalty looks back (-1: all)")
        ->capture_default_str();
    cmd->add_option("-s,--seed", o->sampling.seed, "random seed")->capture_default_str();
    cmd->add_flag("--no-cache", o->no_cache, "recompute the whole sequence at every step (no KV cache)");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating after an end-of-generation token");
    cmd->add_option("--steps", o->steps_path, "write one JSON line per forward step to this file");
    cmd->callback([o] { run_generate(*o); });
}

}  // namespace inferscope::cli
