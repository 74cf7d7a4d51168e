#include "engine/chat/conversation.h"

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope::chat {
namespace {

std::string token_text_or_empty(const Tokenizer& tokenizer, TokenId id) {
    return id >= 0 && id < tokenizer.vocab_size() ? tokenizer.token_text(id) : std::string();
}

// The marker each family closes a turn with; empty where a family ends turns with EOS.
std::string end_of_turn_marker(ChatTemplateFamily family) {
    switch (family) {
        case ChatTemplateFamily::ChatML: return "<|im_end|>";
        case ChatTemplateFamily::Llama3: return "<|eot_id|>";
        case ChatTemplateFamily::Gemma: return "<end_of_turn>";
        case ChatTemplateFamily::Phi3: return "<|end|>";
        default: return {};
    }
}

}  // namespace

std::optional<std::string> model_chat_template(const GgufFile& file, const std::string& name) {
    const std::string key = name.empty() ? "tokenizer.chat_template" : "tokenizer.chat_template." + name;
    if (!file.has(key)) return std::nullopt;
    return file.get_string(key);
}

ChatTemplateInputs conversation_inputs(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                                       bool add_generation_prompt) {
    ChatTemplateInputs inputs;
    inputs.messages = messages;
    inputs.add_generation_prompt = add_generation_prompt;
    inputs.bos_token = token_text_or_empty(tokenizer, tokenizer.bos_id());
    inputs.eos_token = token_text_or_empty(tokenizer, tokenizer.eos_id());
    return inputs;
}

std::vector<TokenId> tokenize_rendered(const Tokenizer& tokenizer, const std::string& text) {
    std::vector<TokenId> ids = tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
    const std::string bos = token_text_or_empty(tokenizer, tokenizer.bos_id());
    const bool starts_with_bos = !bos.empty() && text.rfind(bos, 0) == 0;
    if (tokenizer.add_bos() && tokenizer.bos_id() >= 0 && !starts_with_bos) ids.insert(ids.begin(), tokenizer.bos_id());
    return ids;
}

RenderedConversation render_conversation(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                         const nlohmann::ordered_json& extra_variables) {
    ChatTemplateInputs inputs = conversation_inputs(tokenizer, messages, add_generation_prompt);
    inputs.extra_variables = extra_variables;
    RenderedConversation rendered;
    rendered.text = chat_template.render(inputs);
    rendered.ids = tokenize_rendered(tokenizer, rendered.text);
    return rendered;
}

void check_end_of_turn(const std::string& template_text, const Tokenizer& tokenizer) {
    const ChatTemplateFamily family = chat_template_family(template_text);
    const std::string marker = end_of_turn_marker(family);
    if (marker.empty()) return;
    const std::vector<TokenId> ids = tokenizer.encode(marker, false, true);
    if (ids.size() != 1 || !tokenizer.is_end_of_generation(ids.front())) {
        throw InvalidArgument(std::string("the chat template (") + chat_template_family_name(family) + ") ends turns with " +
                              marker + ", which is not an end-of-generation token of this vocabulary: replies would not stop");
    }
}

RenderedConversation chat_prompt(const std::string& template_text, const Tokenizer& tokenizer,
                                 const nlohmann::ordered_json& messages) {
    check_end_of_turn(template_text, tokenizer);
    return render_conversation(ChatTemplate(template_text), tokenizer, messages, /*add_generation_prompt=*/true);
}

Conversation::Conversation(InferenceSession& session, std::string template_text, std::string system_prompt)
    : session_(&session),
      template_text_(std::move(template_text)),
      template_(template_text_),
      system_prompt_(std::move(system_prompt)) {
    check_end_of_turn(template_text_, session_->model().tokenizer());
    clear();
}

void Conversation::continue_in(InferenceSession& session) {
    const Tokenizer& ours = session_->model().tokenizer();
    const Tokenizer& theirs = session.model().tokenizer();
    if (ours.vocab_size() != theirs.vocab_size()) {
        throw InvalidArgument("a conversation goes on only in a session of its vocabulary (" + std::to_string(ours.vocab_size()) +
                              " tokens, not " + std::to_string(theirs.vocab_size()) + ")");
    }
    session_ = &session;
}

void Conversation::clear() {
    messages_ = nlohmann::ordered_json::array();
    if (!system_prompt_.empty()) add_message("system", system_prompt_);
}

void Conversation::add_message(const std::string& role, const std::string& content) {
    messages_.push_back({{"role", role}, {"content", content}});
}

RenderedConversation Conversation::render(bool add_generation_prompt) const {
    return render_conversation(template_, session_->model().tokenizer(), messages_, add_generation_prompt);
}

ChatTurn Conversation::reply(const std::string& user_text, const GenerationOptions& options, const TokenCallback& on_token) {
    add_message("user", user_text);
    ChatTurn turn;
    try {
        turn.prompt = render(true);
        if (static_cast<int>(turn.prompt.ids.size()) >= session_->context_size()) {
            throw CapacityError("the conversation is " + std::to_string(turn.prompt.ids.size()) +
                                " tokens long, which does not leave room for a reply in the context of " +
                                std::to_string(session_->context_size()) + " tokens: start a new chat (or raise -c)");
        }
        turn.generation = generate(*session_, turn.prompt.ids, options, on_token);
    } catch (...) {
        messages_.erase(messages_.end() - 1);  // the turn did not happen
        throw;
    }
    const Tokenizer& tokenizer = session_->model().tokenizer();
    std::vector<TokenId> content = turn.generation.generated;
    if (!content.empty() && tokenizer.is_end_of_generation(content.back())) content.pop_back();
    turn.reply = tokenizer.decode(content);
    add_message("assistant", turn.reply);
    return turn;
}

}  // namespace inferscope::chat
