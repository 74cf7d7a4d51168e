#pragma once
// What the chat commands (generate --chat, chat, chat-template) share: the conversation given
// on the command line or in a JSON file, and the template to render it with.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace inferscope {
class GgufFile;
}

namespace inferscope::cli {

struct ChatInputOptions {
    std::string system;
    std::vector<std::string> user;       // turns i: user[i], then assistant[i] when given
    std::vector<std::string> assistant;
    std::string messages_path;           // a JSON array of {"role", "content"} (or {"messages": [...]})
    std::string template_path;           // a Jinja file instead of the model's template
    std::string template_name;           // a named template of the model (tokenizer.chat_template.<name>)
};

void add_chat_input_options(CLI::App& command, ChatInputOptions& options, bool with_turns);

// The messages: from --messages, else --system and the --user/--assistant turns, else
// `fallback_user` as the one user message. InvalidArgument for a malformed file or turns.
nlohmann::ordered_json chat_messages(const ChatInputOptions& options, const std::string& fallback_user);

// The template text: --template, else the model file's (named) template. InvalidArgument
// when neither exists, naming what was looked for.
std::string chat_template_text(const ChatInputOptions& options, const GgufFile* model_file);

}  // namespace inferscope::cli
