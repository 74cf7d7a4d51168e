#pragma once
// A conversation with a model through its chat template: the messages so far, rendered and
// tokenized exactly as the model was trained to see them, and each reply generated on an
// inference session. Earlier turns are not recomputed: every turn's prompt starts with the
// previous one, whose KV blocks the session's prefix cache still holds.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/runtime/generator.h"
#include "engine/tokenizer/tokenizer.h"

namespace inferscope {
class GgufFile;
class InferenceSession;
}  // namespace inferscope

namespace inferscope::chat {

// tokenizer.chat_template, or tokenizer.chat_template.<name> for a named one (e.g.
// "tool_use"); nullopt when the file has none.
std::optional<std::string> model_chat_template(const GgufFile& file, const std::string& name = {});

struct RenderedConversation {
    std::string text;
    std::vector<TokenId> ids;
};

// The template's variables for `messages`: bos_token and eos_token are the vocabulary's texts.
ChatTemplateInputs conversation_inputs(const Tokenizer& tokenizer, const nlohmann::ordered_json& messages,
                                       bool add_generation_prompt);

// A rendered conversation's tokens: special tokens parsed; BOS prepended where the vocabulary
// adds one, unless the text already starts with it (templates that write bos_token).
std::vector<TokenId> tokenize_rendered(const Tokenizer& tokenizer, const std::string& text);

// conversation_inputs, rendered, then tokenize_rendered.
RenderedConversation render_conversation(const ChatTemplate& chat_template, const Tokenizer& tokenizer,
                                         const nlohmann::ordered_json& messages, bool add_generation_prompt,
                                         const nlohmann::ordered_json& extra_variables = nlohmann::ordered_json::object());

// The prompt of the assistant's next turn: the end-of-turn check below, then `messages`
// rendered with the generation prompt and tokenized (render_conversation).
RenderedConversation chat_prompt(const std::string& template_text, const Tokenizer& tokenizer,
                                 const nlohmann::ordered_json& messages);

// Checks that the token a template family ends a turn with (<|im_end|>, <|eot_id|>,
// <end_of_turn>, <|end|>) is an end-of-generation token of the vocabulary, so that a reply
// stops; InvalidArgument naming the token otherwise. Families without such a token pass.
void check_end_of_turn(const std::string& template_text, const Tokenizer& tokenizer);

struct ChatTurn {
    std::string reply;                 // the assistant's text, without the end-of-turn token
    RenderedConversation prompt;       // what the model was fed for this turn
    GenerationResult generation;       // tokens, prefill/decode timings, cached prompt tokens
};

class Conversation {
public:
    // InvalidArgument when the template's end-of-turn token is missing from the vocabulary.
    Conversation(InferenceSession& session, std::string template_text, std::string system_prompt = {});

    // Adds the user's message, generates the reply until an end-of-generation token (or
    // options.n_predict) and adds it as the assistant's message. CapacityError when the
    // conversation no longer fits the session's context; TemplateError from the template.
    ChatTurn reply(const std::string& user_text, const GenerationOptions& options, const TokenCallback& on_token = {});

    void add_message(const std::string& role, const std::string& content);
    // Goes on in `session` (of the same vocabulary), as after a GPU lost: the next reply
    // computes the whole conversation there, since that session's cache holds none of it.
    // InvalidArgument for a session of another vocabulary.
    void continue_in(InferenceSession& session);
    // Forgets every turn; the system prompt stays.
    void clear();
    const nlohmann::ordered_json& messages() const { return messages_; }
    RenderedConversation render(bool add_generation_prompt) const;

private:
    InferenceSession* session_;  // never null
    std::string template_text_;
    ChatTemplate template_;
    std::string system_prompt_;
    nlohmann::ordered_json messages_ = nlohmann::ordered_json::array();
};

}  // namespace inferscope::chat
