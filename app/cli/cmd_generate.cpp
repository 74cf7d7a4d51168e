// `generate`: prompt -> tokens, streamed, with timings and (optionally) every step event.
#include <cstdio>
#include <optional>
#include <iostream>

#include "app/cli/chat_cli_common.h"
#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/chat/conversation.h"
#include "engine/core/atomic_file.h"
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
    bool chat = false;  // render the prompt as a conversation with the chat template
    bool raw = false;
    ChatInputOptions chat_input;
};

// The prompt's ids: the text as it is, or (--chat) the conversation rendered by the template.
std::vector<TokenId> prompt_ids(const GenerateOptions& o, const Model& model, std::string& rendered) {
    if (!o.chat) return tokenize_prompt(model, o.prompt);
    const chat::RenderedConversation conversation = chat::chat_prompt(
        chat_template_text(o.chat_input, &model.file()), model.tokenizer(), chat_messages(o.chat_input, o.prompt));
    rendered = conversation.text;
    return conversation.ids;
}

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
    const double warm_up_ms = warm_up(session);
    const Tokenizer& tok = model->tokenizer();
    std::string rendered;
    const std::vector<TokenId> prompt = prompt_ids(o, *model, rendered);

    // The steps file appears whole when the run ends, and a failed run leaves the old one.
    std::optional<AtomicFileWriter> steps;
    if (!o.steps_path.empty()) {
        steps.emplace(o.steps_path);
        session.add_step_observer([&steps](const StepEvent& e) { steps->write(step_json(e).dump() + '\n'); });
    }

    GenerationOptions g;
    g.n_predict = o.n_predict;
    g.n_batch = o.n_batch;
    g.sampling = o.sampling;
    g.use_kv_cache = !o.no_cache;
    g.stop_at_end_of_generation = !o.ignore_eos;

    std::string text;
    TerminalTextStream out;
    if (!o.model.json && !o.chat) {
        for (TokenId id : prompt) out.write(tok.token_to_piece(id));
    }
    const GenerationResult result = generate(session, prompt, g, [&](TokenId id) {
        const std::string piece = o.chat && tok.is_end_of_generation(id) ? std::string() : tok.token_to_piece(id);
        text += piece;
        if (!o.model.json) out.write(piece);
        return true;
    });
    out.flush();
    if (steps) steps->commit();
    const GenerationTimings& t = result.timings;
    if (o.model.json) {
        print_json({{"prompt_ids", prompt},
                    {"rendered_prompt", o.chat ? nlohmann::json(rendered) : nlohmann::json(nullptr)},
                    {"generated_ids", result.generated},
                    {"text", text},
                    {"stop_reason", result.stop_reason},
                    {"kv_cache", !o.no_cache},
                    {"timings",
                     {{"prefill_ms", t.prefill_ms},
                      {"decode_ms_per_token", t.decode_ms_per_token},
                      {"ttft_ms", t.ttft_ms},
                      {"tokens_per_s", t.tokens_per_s},
                      {"warm_up_ms", warm_up_ms}}}});
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
    add_prompt_options(*cmd, o->prompt, "prompt text", false);
    cmd->add_option("-n,--n-predict", o->n_predict, "tokens to generate")->check(positive())->capture_default_str();
    cmd->add_option("-b,--batch-size", o->n_batch, "prompt tokens per prefill step")->check(positive())->capture_default_str();
    add_sampling_options(*cmd, o->sampling);
    cmd->add_flag("--no-cache", o->no_cache, "recompute the whole sequence at every step (no KV cache)");
    cmd->add_flag("--ignore-eos", o->ignore_eos, "keep generating after an end-of-generation token");
    cmd->add_option("--steps", o->steps_path, "write one JSON line per forward step to this file");
    auto* chat = cmd->add_flag("--chat", o->chat,
                               "render -p (or --user/--assistant turns, --messages) with the chat template, and stop at "
                               "the end of the assistant's turn");
    cmd->add_flag("--raw", o->raw, "plain completion of -p (the default)")->excludes(chat);
    add_chat_input_options(*cmd, o->chat_input, /*with_turns=*/true);
    cmd->callback([o] {
        const bool chat_inputs = !o->chat_input.system.empty() || !o->chat_input.user.empty() ||
                                 !o->chat_input.assistant.empty() || !o->chat_input.messages_path.empty() ||
                                 !o->chat_input.template_path.empty() || !o->chat_input.template_name.empty();
        if (chat_inputs && !o->chat) throw InvalidArgument("--system, --user, --assistant, --messages and --template need --chat");
        run_generate(*o);
    });
}

}  // namespace inferscope::cli
