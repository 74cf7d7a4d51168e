// Conversations through a model's chat template: how the rendered text becomes tokens (one
// BOS), turns that reuse the KV blocks of earlier ones, and the errors a person can meet.
#include "engine/chat/conversation.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/runtime/session.h"
#include "support/engine_helpers.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope::chat {
namespace {

std::string template_file(const std::string& name) {
    std::ifstream in(testing::shared_model("chat-templates/" + name));
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// A tiny qwen3 with Qwen's real vocabulary (which has <|im_end|>) and Qwen2.5's template.
std::shared_ptr<const Model> chatml_model() {
    SyntheticModelSpec spec = testing::tiny_spec("qwen3");
    spec.vocab_path = testing::shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string();
    spec.chat_template = template_file("Qwen-Qwen2.5-7B-Instruct.jinja");
    spec.context_length = 512;
    return testing::tiny_model(spec);
}

#define REQUIRE_CHAT_DATA()                                                  \
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");   \
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja")

TEST(Conversation, TheModelsTemplateIsReadAndRendered) {
    REQUIRE_CHAT_DATA();
    const auto model = chatml_model();
    const auto text = model_chat_template(model->file());
    ASSERT_TRUE(text.has_value());
    EXPECT_EQ(chat_template_family(*text), ChatTemplateFamily::ChatML);
    EXPECT_FALSE(model_chat_template(model->file(), "tool_use").has_value());
    const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", "Hi"}}};
    const RenderedConversation r = render_conversation(ChatTemplate(*text), model->tokenizer(), messages, true);
    EXPECT_NE(r.text.find("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"), std::string::npos) << r.text;
    // <|im_start|> and <|im_end|> are single special tokens, and Qwen adds no BOS.
    const std::vector<TokenId> im_end = model->tokenizer().encode("<|im_end|>", false, true);
    ASSERT_EQ(im_end.size(), 1u);
    EXPECT_EQ(std::count(r.ids.begin(), r.ids.end(), im_end[0]), 2);
    EXPECT_EQ(r.ids, model->tokenizer().encode(r.text, false, true));
}

TEST(Conversation, ABosTheTemplateWritesIsNotAddedTwice) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-llama-spm.gguf");
    SyntheticModelSpec spec = testing::tiny_spec("llama");
    spec.vocab_path = testing::shared_model("vocab/ggml-vocab-llama-spm.gguf").string();
    const auto model = testing::tiny_model(spec);
    const Tokenizer& tok = model->tokenizer();
    ASSERT_TRUE(tok.add_bos());
    const std::vector<TokenId> with_bos_text = tokenize_rendered(tok, "<s>[INST] Hi [/INST]");
    const std::vector<TokenId> without = tokenize_rendered(tok, "[INST] Hi [/INST]");
    EXPECT_EQ(std::count(with_bos_text.begin(), with_bos_text.end(), tok.bos_id()), 1);
    EXPECT_EQ(std::count(without.begin(), without.end(), tok.bos_id()), 1);
    EXPECT_EQ(without.front(), tok.bos_id());
}

TEST(Conversation, ASecondTurnStartsWithTheFirstAndReusesItsBlocks) {
    REQUIRE_CHAT_DATA();
    const auto model = chatml_model();
    InferenceSession session(model, testing::test_session_options(KvDtype::F32));
    Conversation conversation(session, *model_chat_template(model->file()), "You are terse.");
    GenerationOptions options;
    options.n_predict = 6;
    options.sampling.temperature = 0;
    const ChatTurn first = conversation.reply("Hello there, how are you today?", options);
    const ChatTurn second = conversation.reply("And tomorrow?", options);
    ASSERT_EQ(conversation.messages().size(), 5u);  // system, user, assistant, user, assistant
    EXPECT_EQ(conversation.messages()[2]["role"], "assistant");
    EXPECT_EQ(conversation.messages()[2]["content"], first.reply);
    // The first turn's rendered prompt is where the second one starts (its last token may
    // merge with the reply that follows it).
    EXPECT_EQ(second.prompt.text.rfind(first.prompt.text, 0), 0u);
    ASSERT_GT(second.prompt.ids.size(), first.prompt.ids.size());
    EXPECT_TRUE(std::equal(first.prompt.ids.begin(), first.prompt.ids.end() - 1, second.prompt.ids.begin()));
    // Whole blocks of 16 the first turn left in the cache are not computed again.
    EXPECT_GE(second.generation.timings.n_prompt_cached, 16 * static_cast<int>(first.prompt.ids.size() / 16));
    conversation.clear();
    EXPECT_EQ(conversation.messages().size(), 1u);
}

// Moved to another session (as the CLI's chat does after losing its GPU), a conversation goes
// on from its whole history, computed anew there, with the replies of one that stayed.
TEST(Conversation, AConversationContinuedInAnotherSessionGoesOnFromItsWholeHistory) {
    REQUIRE_CHAT_DATA();
    const auto model = chatml_model();
    GenerationOptions options;
    options.n_predict = 6;
    options.sampling.temperature = 0;
    InferenceSession stays(model, testing::test_session_options(KvDtype::F32));
    Conversation staying(stays, *model_chat_template(model->file()));
    staying.reply("Hello there, how are you today?", options);
    const ChatTurn stayed = staying.reply("And tomorrow?", options);

    InferenceSession first(model, testing::test_session_options(KvDtype::F32));
    InferenceSession second(model, testing::test_session_options(KvDtype::F32));
    Conversation moving(first, *model_chat_template(model->file()));
    moving.reply("Hello there, how are you today?", options);
    moving.continue_in(second);
    const ChatTurn moved = moving.reply("And tomorrow?", options);
    EXPECT_EQ(moved.generation.timings.n_prompt_cached, 0);
    EXPECT_EQ(moved.prompt.ids, stayed.prompt.ids);
    EXPECT_EQ(moved.generation.generated, stayed.generation.generated);
    EXPECT_EQ(moving.messages(), staying.messages());

    const auto other_vocabulary = testing::tiny_model(testing::tiny_spec("qwen3"));
    ASSERT_NE(other_vocabulary->tokenizer().vocab_size(), model->tokenizer().vocab_size());
    InferenceSession elsewhere(other_vocabulary, testing::test_session_options(KvDtype::F32));
    EXPECT_THROW(moving.continue_in(elsewhere), InvalidArgument);
}

TEST(Conversation, AConversationLongerThanTheContextIsRefusedAndForgotten) {
    REQUIRE_CHAT_DATA();
    const auto model = chatml_model();
    InferenceSession session(model, testing::test_session_options(KvDtype::F32, 64));
    Conversation conversation(session, *model_chat_template(model->file()));
    GenerationOptions options;
    options.n_predict = 2;
    const std::string long_text(400, 'a');
    try {
        conversation.reply(long_text + " b c d e f g h i j k l m n o p q r s t u v w x y z", options);
        FAIL() << "expected CapacityError";
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("context of 64 tokens"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(conversation.messages().empty());
}

TEST(Conversation, AMissingEndOfTurnTokenIsNamed) {
    INFERSCOPE_REQUIRE_SHARED_FILE("modern/qwen3-tiny.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/Qwen-Qwen3-0.6B.jinja");
    // The truncated GPT-2 vocabulary of this file has no <|im_end|>.
    const auto model = Model::load(testing::shared_model("modern/qwen3-tiny.gguf").string());
    try {
        check_end_of_turn(template_file("Qwen-Qwen3-0.6B.jinja"), model->tokenizer());
        FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("ends turns with <|im_end|>"), std::string::npos) << e.what();
    }
}

TEST(Conversation, ATemplateThatRaisesGivesItsMessage) {
    REQUIRE_CHAT_DATA();
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/google-gemma-2-2b-it.jinja");
    const auto model = chatml_model();
    const nlohmann::ordered_json messages = {{{"role", "system"}, {"content", "x"}}, {{"role", "user"}, {"content", "Hi"}}};
    try {
        render_conversation(ChatTemplate(template_file("google-gemma-2-2b-it.jinja")), model->tokenizer(), messages, true);
        FAIL() << "expected TemplateError";
    } catch (const TemplateError& e) {
        EXPECT_STREQ(e.what(), "System role not supported");
    }
}

}  // namespace
}  // namespace inferscope::chat
