// Every conversation of ../shared/models/chat-templates/renderings.json, rendered by Python
// jinja2 from eight vendors' chat templates, must come out of our engine byte for byte (or fail
// with the same raise_exception message).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_test_helpers.h"
#include "engine/core/error.h"

namespace inferscope {
namespace {

using chat::ChatTemplateInputs;

ChatTemplateInputs inputs_of(const nlohmann::ordered_json& c) {
    ChatTemplateInputs inputs;
    inputs.messages = c.at("messages");
    inputs.add_generation_prompt = c.at("add_generation_prompt").get<bool>();
    inputs.bos_token = c.at("bos_token").get<std::string>();
    inputs.eos_token = c.at("eos_token").get<std::string>();
    inputs.now = testing::oracle_date();
    return inputs;
}

TEST(ChatTemplateRenderings, EveryCaseMatchesPythonJinja2) {
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/renderings.json");
    const auto dir = testing::shared_model(testing::kChatTemplatesDir);
    const nlohmann::ordered_json data = nlohmann::ordered_json::parse(testing::read_text_file(dir / "renderings.json"));
    ASSERT_EQ(data.at("schema").get<std::string>(), "chat-template-renderings/1");
    const nlohmann::ordered_json& cases = data.at("cases");
    ASSERT_FALSE(cases.empty());
    size_t passed = 0;
    for (const nlohmann::ordered_json& c : cases) {
        const std::string name = c.at("template").get<std::string>();
        SCOPED_TRACE(name + " add_generation_prompt=" + c.at("add_generation_prompt").dump());
        const std::string text = testing::read_text_file(dir / name);
        ASSERT_FALSE(text.empty()) << name;
        std::string rendered, error;
        try {
            rendered = chat::render_chat_template(text, inputs_of(c));
        } catch (const TemplateError& e) {
            error = e.what();
        }
        if (c.contains("error")) {
            EXPECT_EQ(error, c.at("error").get<std::string>());
            passed += error == c.at("error").get<std::string>();
        } else {
            EXPECT_EQ(error, "");
            EXPECT_EQ(rendered, c.at("text").get<std::string>());
            passed += error.empty() && rendered == c.at("text").get<std::string>();
        }
    }
    EXPECT_EQ(passed, cases.size()) << passed << " of " << cases.size() << " cases match";
}

TEST(ChatTemplateRenderings, FamiliesOfTheVendorTemplates) {
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/renderings.json");
    const auto dir = testing::shared_model(testing::kChatTemplatesDir);
    const std::pair<const char*, const char*> expected[] = {
        {"HuggingFaceTB-SmolLM3-3B.jinja", "smollm"},
        {"Qwen-Qwen2.5-7B-Instruct.jinja", "chatml"},
        {"Qwen-Qwen3-0.6B.jinja", "chatml"},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", "deepseek"},
        {"google-gemma-2-2b-it.jinja", "gemma"},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3"},
        {"microsoft-Phi-3.5-mini-instruct.jinja", "phi3"},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral"},
    };
    for (const auto& [file, family] : expected) {
        EXPECT_STREQ(chat::chat_template_family_name(chat::chat_template_family(testing::read_text_file(dir / file))), family) << file;
    }
    EXPECT_STREQ(chat::chat_template_family_name(chat::chat_template_family("{{ messages[0].content }}")), "unknown");
}

}  // namespace
}  // namespace inferscope
