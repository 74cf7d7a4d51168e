#include "app/cli/chat_cli_common.h"

#include "app/cli/cli_common.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"

namespace inferscope::cli {
namespace {

nlohmann::ordered_json messages_from_file(const std::string& path) {
    nlohmann::ordered_json document;
    try {
        document = nlohmann::ordered_json::parse(read_text_file(path));
    } catch (const nlohmann::ordered_json::parse_error& e) {
        throw InvalidArgument(path + ": not valid JSON (" + e.what() + ")");
    }
    const nlohmann::ordered_json messages = document.is_object() && document.contains("messages") ? document["messages"] : document;
    if (!messages.is_array() || messages.empty()) {
        throw InvalidArgument(path + ": expected a non-empty JSON array of messages (or an object with \"messages\")");
    }
    for (size_t i = 0; i < messages.size(); ++i) {
        const auto& m = messages[i];
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
            throw InvalidArgument(path + ": message " + std::to_string(i) + " has no \"role\" string");
        }
    }
    return messages;
}

}  // namespace

void add_chat_input_options(CLI::App& command, ChatInputOptions& options, bool with_turns) {
    command.add_option("--messages", options.messages_path, "JSON file: an array of {\"role\", \"content\"} messages");
    command.add_option("--template", options.template_path, "Jinja chat template file (instead of the model's)");
    command.add_option("--template-name", options.template_name,
                       "a named template of the model (tokenizer.chat_template.NAME, e.g. tool_use)");
    if (!with_turns) return;
    command.add_option("--system", options.system, "system prompt");
    command.add_option("--user", options.user, "a user turn (repeatable; turn i is --user i then --assistant i)");
    command.add_option("--assistant", options.assistant, "an assistant turn (repeatable)");
}

nlohmann::ordered_json chat_messages(const ChatInputOptions& options, const std::string& fallback_user) {
    if (!options.messages_path.empty()) return messages_from_file(options.messages_path);
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    if (!options.system.empty()) messages.push_back({{"role", "system"}, {"content", options.system}});
    if (options.assistant.size() > options.user.size()) {
        throw InvalidArgument("more --assistant turns (" + std::to_string(options.assistant.size()) + ") than --user turns (" +
                              std::to_string(options.user.size()) + ")");
    }
    for (size_t i = 0; i < options.user.size(); ++i) {
        messages.push_back({{"role", "user"}, {"content", options.user[i]}});
        if (i < options.assistant.size()) messages.push_back({{"role", "assistant"}, {"content", options.assistant[i]}});
    }
    if (options.user.empty()) messages.push_back({{"role", "user"}, {"content", fallback_user}});
    return messages;
}

std::string chat_template_text(const ChatInputOptions& options, const GgufFile* model_file) {
    if (!options.template_path.empty()) return read_text_file(options.template_path);
    if (model_file != nullptr) {
        if (auto text = chat::model_chat_template(*model_file, options.template_name)) return *text;
    }
    const std::string key = options.template_name.empty() ? "tokenizer.chat_template"
                                                          : "tokenizer.chat_template." + options.template_name;
    throw InvalidArgument((model_file != nullptr ? model_file->path() + " has no " + key : "no model given (-m)") +
                          ": give a template with --template FILE.jinja");
}

}  // namespace inferscope::cli
