// inferscope-cli spec, spec-table and softlabels end to end: JSON against the formulas and
// against the engine's plain greedy decoding, and clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

std::string stories_path() { return testing::shared_model("stories260K.gguf").string(); }

TEST(CliSpecTable, JsonHasTheWorkedExampleSpeedups) {
    const auto r = testing::run_cli("spec-table --alpha 0.3,0.9,1 --gamma 8 --cost 0.1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = nlohmann::json::parse(r.out).at("rows");
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_NEAR(rows[0].at("speedup").get<double>(), 0.79363517, 1e-8);
    EXPECT_NEAR(rows[1].at("speedup").get<double>(), 3.40321951, 1e-8);
    EXPECT_NEAR(rows[1].at("expected_tokens_per_verify").get<double>(), 6.12579511, 1e-8);
    EXPECT_EQ(rows[2].at("expected_tokens_per_verify").get<double>(), 9.0);  // alpha = 1: gamma + 1
    EXPECT_EQ(rows[2].at("gamma"), 8);
    EXPECT_EQ(rows[2].at("cost_ratio"), 0.1);
    const auto table = testing::run_cli("spec-table");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("3.40x"), std::string::npos) << table.out;  // alpha 0.9, gamma 8
}

TEST(CliSpecTable, AlphaOutOfRangeIsAnError) {
    const auto r = testing::run_cli("spec-table --alpha 1.5");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("alpha must be within [0, 1]"), std::string::npos) << r.err;
}

TEST(CliSpec, GreedyOutputEqualsGenerateAndCountsAddUp) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::string common = " -m " + stories_path() + " -p 'Once upon a time' -n 24 -t 1 --json";
    const auto r = testing::run_cli("spec --draft-scheme int4:row --gamma 4" + common);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("mode"), "greedy");
    EXPECT_EQ(j.at("identical_to_plain"), true);
    const auto g = testing::run_cli("generate --temp 0" + common);
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_EQ(j.at("ids"), nlohmann::json::parse(g.out).at("generated_ids"));
    const int proposed = j.at("proposed"), accepted = j.at("accepted"), passes = j.at("verify_passes");
    EXPECT_LE(accepted, proposed);
    EXPECT_NEAR(j.at("acceptance").get<double>(), static_cast<double>(accepted) / proposed, 1e-12);
    EXPECT_NEAR(j.at("tokens_per_verify").get<double>(), static_cast<double>(accepted + passes) / passes, 1e-12);
    EXPECT_GE(accepted + passes, j.at("n_generated").get<int>());
    for (const char* key : {"draft_step_ms", "target_step_ms", "verify_pass_ms", "cost_ratio", "speedup", "plain_ms"}) {
        EXPECT_GT(j.at(key).get<double>(), 0.0) << key;
    }
    EXPECT_NEAR(j.at("cost_ratio").get<double>(), j.at("draft_step_ms").get<double>() / j.at("target_step_ms").get<double>(), 1e-9);
}

TEST(CliSpec, DraftChoiceAndVocabularyErrors) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto none = testing::run_cli("spec -m " + stories_path() + " -n 4");
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_NE(none.err.find("exactly one of --draft FILE and --draft-scheme SCHEME"), std::string::npos) << none.err;
    const auto bad_scheme = testing::run_cli("spec -m " + stories_path() + " --draft-scheme int9:row -n 4");
    EXPECT_EQ(bad_scheme.exit_code, 1);
    EXPECT_NE(bad_scheme.err.find("error: "), std::string::npos) << bad_scheme.err;
    const std::string qwen = testing::shared_model("qwen2-tiny.gguf").string();
    if (!std::filesystem::exists(qwen)) GTEST_SKIP() << "shared test data not found: " << qwen;
    const auto other = testing::run_cli("spec -m " + stories_path() + " --draft " + qwen + " -n 4");
    EXPECT_EQ(other.exit_code, 1);
    EXPECT_NE(other.err.find("different vocabularies (512 vs 50257 tokens)"), std::string::npos) << other.err;
}

TEST(CliSoftLabels, SquareRootRatiosAndStudentKl) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto r = testing::run_cli("softlabels -m " + stories_path() +
                                    " -p 'Once upon a time' --top 5 --temp 1,2 --student-scheme int4:row -t 1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto& t = j.at("temperatures");
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(j.at("top_k"), 5);
    const double r1 = t[0].at("top_to_kth_ratio"), r2 = t[1].at("top_to_kth_ratio");
    EXPECT_NEAR(r2, std::sqrt(r1), 1e-9 * r2);
    for (const auto& row : t) {
        const auto& top = row.at("top");
        ASSERT_EQ(top.size(), 5u);
        for (size_t i = 1; i < top.size(); ++i) EXPECT_GE(top[i - 1].at("probability"), top[i].at("probability"));
        EXPECT_NEAR(row.at("mass_beyond_argmax").get<double>(), 1.0 - top[0].at("probability").get<double>(), 1e-12);
        EXPECT_GT(row.at("kl_teacher_student").get<double>(), 0.0);
    }
    const auto plain = testing::run_cli("softlabels -m " + stories_path() + " -p 'Once upon a time' --json");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    EXPECT_TRUE(nlohmann::json::parse(plain.out).at("temperatures")[0].at("kl_teacher_student").is_null());
}

}  // namespace
}  // namespace inferscope
