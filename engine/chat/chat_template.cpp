#include "engine/chat/chat_template.h"

#include <chrono>

#include "engine/chat/jinja_interpreter.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

std::tm local_time_now() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm result{};
    localtime_r(&t, &result);
    return result;
}

// transformers' strftime_now: Python's datetime.now().strftime(format), C locale.
Value strftime_function(std::optional<std::tm> fixed) {
    return Value(Function([fixed](const CallArgs& args) {
        const Value* format = args.get(0, "format");
        if (format == nullptr || !format->is_string()) throw TemplateError("strftime_now() needs a format string", args.line);
        const std::tm when = fixed ? *fixed : local_time_now();
        std::string buffer(256 + format->as_string().size() * 8, '\0');
        const size_t n = std::strftime(buffer.data(), buffer.size(), format->as_string().c_str(), &when);
        buffer.resize(n);
        return Value(std::move(buffer));
    }));
}

// raise_exception(msg): the template refuses the conversation; the message is passed on as it is.
Value raise_exception_function() {
    return Value(Function([](const CallArgs& args) -> Value {
        const Value* message = args.get(0, "message");
        throw TemplateError(message ? message->str() : std::string());
    }));
}

}  // namespace

nlohmann::ordered_json chat_messages_json(const std::vector<ChatMessage>& messages) {
    nlohmann::ordered_json array = nlohmann::ordered_json::array();
    for (const ChatMessage& m : messages) {
        nlohmann::ordered_json object = {{"role", m.role}, {"content", m.content}};
        for (const auto& [key, value] : m.extra.items()) object[key] = value;
        array.push_back(std::move(object));
    }
    return array;
}

ChatTemplate::ChatTemplate(const std::string& template_text) : template_(std::make_unique<Template>(template_text)) {}
ChatTemplate::~ChatTemplate() = default;
ChatTemplate::ChatTemplate(ChatTemplate&&) noexcept = default;
ChatTemplate& ChatTemplate::operator=(ChatTemplate&&) noexcept = default;

std::string ChatTemplate::render(const ChatTemplateInputs& inputs) const {
    if (!inputs.messages.is_array()) throw InvalidArgument("chat template: messages must be a JSON array");
    if (!inputs.extra_variables.is_object()) throw InvalidArgument("chat template: extra variables must be a JSON object");
    ValueDict variables;
    variables.set("messages", Value::from_json(inputs.messages));
    variables.set("add_generation_prompt", Value(inputs.add_generation_prompt));
    variables.set("bos_token", Value(inputs.bos_token));
    variables.set("eos_token", Value(inputs.eos_token));
    variables.set("raise_exception", raise_exception_function());
    variables.set("strftime_now", strftime_function(inputs.now));
    for (const auto& [name, value] : inputs.extra_variables.items()) variables.set(name, Value::from_json(value));
    return template_->render(variables);
}

std::string render_chat_template(const std::string& template_text, const ChatTemplateInputs& inputs) {
    return ChatTemplate(template_text).render(inputs);
}

ChatTemplateFamily chat_template_family(const std::string& t) {
    auto has = [&](const char* marker) { return t.find(marker) != std::string::npos; };
    // DeepSeek's distills of Qwen and SmolLM3 write their own markers beside ChatML-like ones,
    // so they are recognised first.
    if (has("<｜User｜>")) return ChatTemplateFamily::DeepSeek;
    if (has("<|im_start|>") && has("SmolLM")) return ChatTemplateFamily::SmolLM;
    if (has("<|im_start|>")) return ChatTemplateFamily::ChatML;
    if (has("<|start_header_id|>")) return ChatTemplateFamily::Llama3;
    if (has("<start_of_turn>")) return ChatTemplateFamily::Gemma;
    if (has("<|user|>") && has("<|end|>")) return ChatTemplateFamily::Phi3;
    if (has("[INST]")) return ChatTemplateFamily::Mistral;
    return ChatTemplateFamily::Unknown;
}

const char* chat_template_family_name(ChatTemplateFamily family) {
    switch (family) {
        case ChatTemplateFamily::ChatML: return "chatml";
        case ChatTemplateFamily::Llama3: return "llama3";
        case ChatTemplateFamily::Gemma: return "gemma";
        case ChatTemplateFamily::Phi3: return "phi3";
        case ChatTemplateFamily::Mistral: return "mistral";
        case ChatTemplateFamily::DeepSeek: return "deepseek";
        case ChatTemplateFamily::SmolLM: return "smollm";
        case ChatTemplateFamily::Unknown: break;
    }
    return "unknown";
}

}  // namespace inferscope::chat
