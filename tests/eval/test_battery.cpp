// The prompt battery: its file format, answer matching, scoring, and the default battery
// shipped in resources/quality.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/core/error.h"
#include "engine/eval/battery.h"
#include "engine/runtime/session.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

std::string parse_error(const std::string& text) {
    try {
        parse_battery(text, "b.txt");
    } catch (const InvalidArgument& e) {
        return e.what();
    }
    return "";
}

TEST(Battery, ParsesItemsAnswersAndDirectives) {
    const Battery b = parse_battery(
        "# a comment\n"
        "max_tokens: 5\n"
        "\n"
        "Q:  The capital of France is  \n"
        "A: Paris\n"
        "Q: Question:\\nTwo plus two?\\nAnswer:\n"
        "A:  four | 4 |  \n",
        "b.txt");
    EXPECT_EQ(b.source, "b.txt");
    EXPECT_EQ(b.max_tokens, 5);
    ASSERT_EQ(b.items.size(), 2u);
    EXPECT_EQ(b.items[0].prompt, "The capital of France is");
    EXPECT_EQ(b.items[0].answers, (std::vector<std::string>{"Paris"}));
    EXPECT_EQ(b.items[0].line, 4);
    EXPECT_EQ(b.items[1].prompt, "Question:\nTwo plus two?\nAnswer:");
    EXPECT_EQ(b.items[1].answers, (std::vector<std::string>{"four", "4"}));
}

TEST(Battery, MalformedFilesNameTheLine) {
    EXPECT_EQ(parse_error("A: x\n"), "b.txt:1: an A: line must follow a Q: line");
    EXPECT_EQ(parse_error("Q: a\nQ: b\nA: c\n"), "b.txt:1: the Q: has no A: line");
    EXPECT_EQ(parse_error("Q: a\nA: |\n"), "b.txt:2: no answers after A:");
    EXPECT_EQ(parse_error("Q: a\nA: b\nA: c\n"), "b.txt:3: a second A: line for the same Q:");
    EXPECT_EQ(parse_error("Q:\nA: b\n"), "b.txt:1: empty prompt");
    EXPECT_EQ(parse_error("# nothing\n"), "b.txt:1: the battery has no items");
    EXPECT_EQ(parse_error("Q: a\nA: b\nmax_tokens: 3\n"), "b.txt:3: max_tokens must come before the first Q:");
    EXPECT_EQ(parse_error("max_tokens: 0\nQ: a\nA: b\n"), "b.txt:1: max_tokens must be an integer from 1 to 4096");
    EXPECT_NE(parse_error("Question: a\n").find("expected Q:, A:"), std::string::npos);
    EXPECT_THROW(load_battery("/nonexistent/battery.txt"), Error);
}

TEST(Battery, AnswersMatchWholeWordsIgnoringCase) {
    const std::vector<std::string> paris = {"Paris"};
    EXPECT_TRUE(answer_matches(" paris, of course", paris));
    EXPECT_TRUE(answer_matches("It is PARIS.", paris));
    EXPECT_FALSE(answer_matches(" Parisian food", paris));
    EXPECT_FALSE(answer_matches("comparison", paris));
    const std::vector<std::string> numbers = {"four", "4"};
    EXPECT_TRUE(answer_matches("= 4.", numbers));
    EXPECT_FALSE(answer_matches("= 42", numbers));
    EXPECT_TRUE(answer_matches("42 or 4", numbers));  // a later occurrence counts
    const std::vector<std::string> phrase = {"thank you"};
    EXPECT_TRUE(answer_matches("\"Thank you, mom\"", phrase));
    EXPECT_FALSE(answer_matches("", phrase));
}

TEST(Battery, ScoringRunsGreedyDecodingForEveryItem) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    SessionOptions so;
    so.n_threads = 2;
    so.n_ctx = 64;
    InferenceSession session(model, so);
    Battery b = parse_battery("max_tokens: 6\nQ: hello\nA: zzzz-never\nQ: abc\nA: zzzz-never\n", "tiny");
    const BatteryResult plain = run_battery(session, b, 1.0f);
    EXPECT_EQ(plain.total, 2);
    EXPECT_EQ(plain.passed, 0);
    ASSERT_EQ(plain.items.size(), 2u);
    EXPECT_FALSE(plain.items[0].generated.empty());
    // The answer is whatever greedy decoding produced: accepting it makes the item pass,
    // and decoding is deterministic.
    b.items[0].answers = {plain.items[0].generated};
    const BatteryResult again = run_battery(session, b, 1.0f);
    EXPECT_EQ(again.items[0].generated, plain.items[0].generated);
    const BatteryResult penalized = run_battery(session, b, 1.3f);
    EXPECT_EQ(penalized.repeat_penalty, 1.3f);
    EXPECT_EQ(session.kv_cache().tokens_in_use(), 0);
}

std::filesystem::path default_battery_path() {
    return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "resources" / "quality" / "battery-default.txt";
}

TEST(Battery, DefaultBatteryParses) {
    const Battery b = load_battery(default_battery_path().string());
    EXPECT_EQ(b.items.size(), 16u);
    EXPECT_EQ(b.max_tokens, 16);
}

// stories260K completes the story half of the default battery.
TEST(Battery, Stories260KPassesTheStoryItems) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto model = Model::load(testing::shared_model("stories260K.gguf").string());
    SessionOptions so;
    so.n_threads = 2;
    so.n_ctx = 128;
    InferenceSession session(model, so);
    const BatteryResult r = run_battery(session, load_battery(default_battery_path().string()), 1.0f);
    int story_passed = 0;
    for (size_t i = 0; i < 8; ++i) story_passed += r.items[i].passed ? 1 : 0;
    EXPECT_GE(story_passed, 6);
    EXPECT_EQ(r.total, 16);
}

}  // namespace
}  // namespace inferscope
