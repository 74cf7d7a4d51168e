// `chat-template`: the prompt a conversation renders to (what the model is fed); `chat`: an
// interactive conversation that keeps the KV cache between turns.
#include <cstdio>
#include <ctime>
#include <iostream>
#include <memory>

#include "app/cli/chat_cli_common.h"
#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"

namespace inferscope::cli {
namespace {

struct ChatTemplateCliOptions {
    ModelOptions model;
    ChatInputOptions input;
    bool no_generation_prompt = false;
    std::optional<std::string> bos, eos;
    std::optional<std::string> date;
};

// The day strftime_now() renders (templates such as Llama 3's print "Today Date"): YYYY-MM-DD,
// taken at noon UTC; InvalidArgument naming the text otherwise.
std::tm render_date(const std::string& text) {
    int year = 0, month = 0, day = 0;
    char tail = 0;
    if (std::sscanf(text.c_str(), "%4d-%2d-%2d%c", &year, &month, &day, &tail) != 3) {
        throw InvalidArgument("--date: \"" + text + "\" is not YYYY-MM-DD");
    }
    std::tm t{};
    t.tm_year = year - 1900;
    t.tm_mon = month - 1;
    t.tm_mday = day;
    t.tm_hour = 12;
    std::tm normalized = t;
    if (::timegm(&normalized) == -1 || normalized.tm_year != t.tm_year || normalized.tm_mon != t.tm_mon ||
        normalized.tm_mday != t.tm_mday) {
        throw InvalidArgument("--date: " + text + " is not a calendar date");
    }
    return normalized;  // with its weekday and day of the year filled in
}

void run_chat_template(const ChatTemplateCliOptions& o) {
    if (o.input.messages_path.empty()) throw InvalidArgument("chat-template needs the conversation: --messages FILE.json");
    if (o.model.model_path.empty() && o.input.template_path.empty()) {
        throw InvalidArgument("chat-template needs a model (-m, a vocab-only file will do) or --template FILE.jinja");
    }
    std::optional<GgufFile> file;
    std::shared_ptr<const Tokenizer> tokenizer;
    if (!o.model.model_path.empty()) {
        file.emplace(GgufFile::open(o.model.model_path));
        tokenizer = Tokenizer::from_gguf(*file);
    }
    const std::string text = chat_template_text(o.input, file ? &*file : nullptr);
    const nlohmann::ordered_json messages = chat_messages(o.input, "");
    chat::ChatTemplateInputs inputs;
    if (tokenizer) inputs = chat::conversation_inputs(*tokenizer, messages, !o.no_generation_prompt);
    inputs.messages = messages;
    inputs.add_generation_prompt = !o.no_generation_prompt;
    if (o.bos) inputs.bos_token = *o.bos;
    if (o.eos) inputs.eos_token = *o.eos;
    if (o.date) inputs.now = render_date(*o.date);
    const std::string rendered = chat::ChatTemplate(text).render(inputs);
    if (!o.model.json) {
        std::fwrite(rendered.data(), 1, rendered.size(), stdout);
        return;
    }
    nlohmann::json out = {{"text", rendered}, {"family", chat::chat_template_family_name(chat::chat_template_family(text))}};
    if (tokenizer) out["ids"] = chat::tokenize_rendered(*tokenizer, rendered);
    print_json(out);
}

struct ChatCliOptions {
    ModelOptions model;
    ChatInputOptions input;
    int n_predict = 512;
    SamplingParams sampling;
};

void print_turn_figures(const chat::ChatTurn& turn, int turn_number) {
    const GenerationTimings& t = turn.generation.timings;
    std::fprintf(stderr,
                 "[turn %d: prompt %d tokens (%d from the KV cache), prefill %.1f ms; reply %d tokens, %.2f ms/token, "
                 "%.1f tokens/s; stop: %s]\n",
                 turn_number, t.n_prompt, t.n_prompt_cached, t.prefill_ms, t.n_generated, t.decode_ms_per_token,
                 t.tokens_per_s, turn.generation.stop_reason.c_str());
}

// A CPU session in place of one whose GPU its driver gave up, said on stderr.
std::unique_ptr<InferenceSession> cpu_session_after(const DeviceLostError& lost, const ModelOptions& o,
                                                    const std::shared_ptr<const Model>& model) {
    std::fprintf(stderr, "\nerror: %s\nthe chat continues on the CPU backend\n", lost.what());
    return std::make_unique<InferenceSession>(model, session_options(o), nullptr);
}

// The chat's session on --backend's device, warmed up; on the CPU where that GPU is lost on the way.
std::unique_ptr<InferenceSession> chat_session(const ModelOptions& o, const std::shared_ptr<const Model>& model) {
    try {
        auto session = std::make_unique<InferenceSession>(model, session_options(o), make_backend(o, model));
        warm_up(*session);
        return session;
    } catch (const DeviceLostError& e) {
        return cpu_session_after(e, o, model);
    }
}

// One turn: the reply streamed to stdout, its figures to stderr. A conversation too long for
// the context is said and stays as it was.
void answer(chat::Conversation& conversation, const std::string& line, const GenerationOptions& g, const Tokenizer& tok,
            int& turn_number) {
    try {
        TerminalTextStream out;
        const chat::ChatTurn turn = conversation.reply(line, g, [&](TokenId id) {
            if (!tok.is_end_of_generation(id)) out.write(tok.token_to_piece(id));
            return true;
        });
        out.flush();
        std::cout << std::endl;
        print_turn_figures(turn, ++turn_number);
    } catch (const CapacityError& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
    }
}

void run_chat(const ChatCliOptions& o) {
    const auto model = load_model(o.model);
    const std::string text = chat_template_text(o.input, &model->file());
    std::unique_ptr<InferenceSession> session = chat_session(o.model, model);
    chat::Conversation conversation(*session, text, o.input.system);
    if (!o.input.user.empty() || !o.input.messages_path.empty()) {
        for (const auto& m : chat_messages(o.input, "")) {
            if (m["role"] != "system") conversation.add_message(m["role"].get<std::string>(), m.value("content", ""));
        }
    }
    GenerationOptions g;
    g.n_predict = o.n_predict;
    g.sampling = o.sampling;
    const Tokenizer& tok = model->tokenizer();
    std::fprintf(stderr, "chat with %s (%s template); /new starts over, /quit or end of input leaves\n",
                 model->config().name.c_str(), chat::chat_template_family_name(chat::chat_template_family(text)));
    int turn_number = 0;
    std::string line;
    while (true) {
        std::fprintf(stderr, "> ");
        if (!std::getline(std::cin, line) || line == "/quit") break;
        if (line == "/new") {
            conversation.clear();
            turn_number = 0;
            continue;
        }
        if (line.empty()) continue;
        try {
            answer(conversation, line, g, tok, turn_number);
        } catch (const DeviceLostError& e) {
            // The turn did not happen (the conversation rolled it back): it is asked again on the CPU,
            // below what it had printed.
            std::cout << std::endl;
            std::unique_ptr<InferenceSession> cpu = cpu_session_after(e, o.model, model);
            conversation.continue_in(*cpu);
            session = std::move(cpu);
            answer(conversation, line, g, tok, turn_number);
        }
    }
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
    auto o = std::make_shared<ChatTemplateCliOptions>();
    CLI::App* cmd = app.add_subcommand("chat-template", "the prompt a conversation renders to with a chat template");
    add_model_options(*cmd, o->model, false);
    add_chat_input_options(*cmd, o->input, /*with_turns=*/false);
    cmd->add_flag("--no-generation-prompt", o->no_generation_prompt, "do not open the assistant's turn at the end");
    cmd->add_option("--bos", o->bos, "bos_token text (default: the vocabulary's)");
    cmd->add_option("--eos", o->eos, "eos_token text (default: the vocabulary's)");
    cmd->add_option("--date", o->date, "the day strftime_now() gives, YYYY-MM-DD (default: today), for renders that repeat");
    cmd->callback([o] { run_chat_template(*o); });
}

void add_chat_command(CLI::App& app) {
    auto o = std::make_shared<ChatCliOptions>();
    CLI::App* cmd = app.add_subcommand("chat", "an interactive conversation through the model's chat template");
    add_model_options(*cmd, o->model, true);
    add_chat_input_options(*cmd, o->input, /*with_turns=*/true);
    cmd->add_option("-n,--n-predict", o->n_predict, "tokens per reply at most")->check(positive())->capture_default_str();
    add_sampling_options(*cmd, o->sampling);
    cmd->callback([o] { run_chat(*o); });
}

}  // namespace inferscope::cli
