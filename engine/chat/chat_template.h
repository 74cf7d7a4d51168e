#pragma once
// Chat templates (the tokenizer.chat_template of a GGUF, a Jinja2 text) rendered into prompts
// exactly as transformers' apply_chat_template renders them with Python jinja2: the same
// variables (messages, add_generation_prompt, bos_token, eos_token, anything extra such as
// tools), the same raise_exception() and strftime_now() functions, and tojson as json.dumps.
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace inferscope::chat {

class Template;

struct ChatMessage {
    std::string role;
    std::string content;
    // Further fields of the message (tool_calls, reasoning_content, ...), merged into it.
    nlohmann::ordered_json extra = nlohmann::ordered_json::object();
};

// The messages as the JSON array a template sees.
nlohmann::ordered_json chat_messages_json(const std::vector<ChatMessage>& messages);

// JSON here is ordered_json: templates see object keys in the order they were given, as
// transformers' templates see Python dicts (tojson of a tool's schema depends on it).
struct ChatTemplateInputs {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    bool add_generation_prompt = false;
    std::string bos_token;
    std::string eos_token;
    // More variables (tools, enable_thinking, date_string, ...); they override the ones above.
    nlohmann::ordered_json extra_variables = nlohmann::ordered_json::object();
    // The time strftime_now() formats; the current local time when unset.
    std::optional<std::tm> now;
};

class ChatTemplate {
public:
    // Parses once; throws TemplateError (engine/core/error.h) naming the line of malformed or
    // unsupported syntax.
    explicit ChatTemplate(const std::string& template_text);
    ~ChatTemplate();
    ChatTemplate(ChatTemplate&&) noexcept;
    ChatTemplate& operator=(ChatTemplate&&) noexcept;

    // Throws TemplateError; the template's raise_exception(msg) gives one whose what() is msg.
    std::string render(const ChatTemplateInputs& inputs) const;

private:
    std::unique_ptr<Template> template_;
};

// Parses and renders in one go.
std::string render_chat_template(const std::string& template_text, const ChatTemplateInputs& inputs);

enum class ChatTemplateFamily { ChatML, Llama3, Gemma, Phi3, Mistral, DeepSeek, SmolLM, Unknown };

// The family a template belongs to, from the turn markers it writes.
ChatTemplateFamily chat_template_family(const std::string& template_text);
// "chatml", "llama3", "gemma", "phi3", "mistral", "deepseek", "smollm" or "unknown".
const char* chat_template_family_name(ChatTemplateFamily family);

}  // namespace inferscope::chat
