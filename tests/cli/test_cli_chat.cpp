// The chat commands end to end: chat-template against Python jinja2's renderings, generate
// --chat and the interactive chat on a model that carries a template, and their errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;
using testing::shared_model;

class CliChat : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-cli-chat-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string write(const std::string& name, const std::string& text) {
        const fs::path path = dir_ / name;
        std::ofstream(path, std::ios::binary) << text;
        return path.string();
    }
    // A tiny qwen3 with Qwen's vocabulary and Qwen2.5's chat template.
    std::string chat_model() {
        const std::string path = (dir_ / "chat.gguf").string();
        const auto r = run_cli("make-model --preset tiny-qwen3 --vocab " +
                               shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string() + " --chat-template " +
                               shared_model("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja").string() + " -o " + path);
        EXPECT_EQ(r.exit_code, 0) << r.err;
        return path;
    }
    fs::path dir_;
};

TEST_F(CliChat, ChatTemplateRendersAsPythonJinja2) {
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/renderings.json");
    std::ifstream in(shared_model("chat-templates/renderings.json"));
    const auto renderings = nlohmann::json::parse(in);
    int checked = 0;
    for (const auto& c : renderings["cases"]) {
        if (!c.contains("text")) continue;
        const std::string messages = write("messages.json", c["messages"].dump());
        std::string args = "chat-template --json --messages " + messages + " --template " +
                           shared_model("chat-templates/" + c["template"].get<std::string>()).string() + " --bos '" +
                           c["bos_token"].get<std::string>() + "' --eos '" + c["eos_token"].get<std::string>() + "'";
        if (!c["add_generation_prompt"].get<bool>()) args += " --no-generation-prompt";
        args += " --date 2026-12-03";  // the day the references were rendered with (strftime_now)
        const auto r = run_cli(args);
        ASSERT_EQ(r.exit_code, 0) << c["template"] << ": " << r.err;
        EXPECT_EQ(nlohmann::json::parse(r.out)["text"], c["text"]) << c["template"];
        ++checked;
    }
    EXPECT_GE(checked, 8);

    const std::string messages = write("one.json", R"([{"role": "user", "content": "hi"}])");
    const std::string llama = "chat-template --template " + shared_model("chat-templates/meta-llama-Llama-3.2-3B-Instruct.jinja").string() +
                              " --messages " + messages + " --date ";
    EXPECT_NE(run_cli(llama + "2024-02-29").out.find("Today Date: 29 Feb 2024"), std::string::npos);
    const auto bad = run_cli(llama + "2026-02-30");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("--date: 2026-02-30 is not a calendar date"), std::string::npos) << bad.err;
}

TEST_F(CliChat, GenerateChatFeedsTheRenderedConversation) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    const std::string model = chat_model();
    const auto info = nlohmann::json::parse(run_cli("info --json -m " + model).out);
    EXPECT_EQ(info["chat_template"]["family"], "chatml");
    const auto r = run_cli("generate --json --chat -m " + model +
                           " --system 'Be brief.' --user 'Hi' --assistant 'Hello!' --user 'Bye' -n 3 --temp 0");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["rendered_prompt"],
              "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!"
              "<|im_end|>\n<|im_start|>user\nBye<|im_end|>\n<|im_start|>assistant\n");
    const auto shown = run_cli("chat-template --json -m " + model + " --messages " +
                               write("m.json", R"([{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},)"
                                               R"({"role":"assistant","content":"Hello!"},{"role":"user","content":"Bye"}])"));
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(nlohmann::json::parse(shown.out)["ids"], j["prompt_ids"]);
}

TEST_F(CliChat, ChatKeepsTheConversationAndReportsEachTurn) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    const std::string model = chat_model();
    const std::string input = write("input.txt", "Hello there, how are you doing today?\n/new\nAgain\n");
    const auto r = run_cli("chat -m " + model + " -n 4 --temp 0 < " + input);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("[turn 1: prompt"), std::string::npos) << r.err;
    // /new started over: the next turn is turn 1 again.
    EXPECT_EQ(r.err.find("[turn 2:"), std::string::npos) << r.err;
}

TEST_F(CliChat, ErrorsNameTheProblem) {
    const auto no_template = run_cli("generate --chat -m " + shared_model("stories260K.gguf").string() + " -p hi");
    EXPECT_EQ(no_template.exit_code, 1);
    EXPECT_NE(no_template.err.find("has no tokenizer.chat_template"), std::string::npos) << no_template.err;
    const auto turns_without_chat = run_cli("generate --user hi");
    EXPECT_EQ(turns_without_chat.exit_code, 1);
    EXPECT_NE(turns_without_chat.err.find("need --chat"), std::string::npos) << turns_without_chat.err;
    const auto bad = run_cli("chat-template --template " + write("bad.jinja", "{% if x %}unclosed") + " --messages " +
                             write("m.json", R"([{"role":"user","content":"Hi"}])"));
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_FALSE(bad.err.empty());
    const auto raises = run_cli("chat-template --template " +
                                shared_model("chat-templates/google-gemma-2-2b-it.jinja").string() + " --messages " +
                                write("s.json", R"([{"role":"system","content":"x"},{"role":"user","content":"Hi"}])"));
    EXPECT_EQ(raises.exit_code, 1);
    EXPECT_NE(raises.err.find("System role not supported"), std::string::npos) << raises.err;
}

}  // namespace
}  // namespace inferscope
