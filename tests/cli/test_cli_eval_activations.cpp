// inferscope-cli eval --act: INT8 activation rows beside the weight schemes, in the JSON and
// the table, and bad activation texts refused with an error line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

class EvalActivationsCliTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-eval-act-cli-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        SyntheticModelSpec spec = testing::tiny_spec("llama");
        spec.outlier_dims = {5};  // a residual outlier for llm.int8 to keep in F32
        build_synthetic_model(spec).write_file(path("model.gguf"));
        std::ofstream text(path("text.txt"));
        for (int i = 0; i < 60; ++i) text << "the quick brown fox jumps over the lazy dog " << i << ". ";
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    fs::path dir_;
};

TEST_F(EvalActivationsCliTest, ActivationRowsFollowTheUnquantizedModelAndEachScheme) {
    const auto r = testing::run_cli("eval -m " + path("model.gguf") + " -s int8:row --act int8:tensor --act llm.int8:3 -f " +
                                    path("text.txt") + " -c 64 --agreement 3 --json -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const auto& rows = j["rows"];
    ASSERT_EQ(rows.size(), 6u);
    const std::vector<std::pair<std::string, std::string>> expected = {
        {"reference", "f32"},    {"reference", "int8:tensor"}, {"reference", "llm.int8:3"},
        {"int8:row", "f32"},     {"int8:row", "int8:tensor"},  {"int8:row", "llm.int8:3"}};
    for (size_t i = 0; i < rows.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(rows[i]["scheme"], expected[i].first);
        EXPECT_EQ(rows[i]["activations"], expected[i].second);
    }
    EXPECT_FALSE(rows[0].contains("kl_mean"));  // the reference itself
    EXPECT_EQ(rows[2]["activation_outlier_threshold"].get<double>(), 3.0);
    EXPECT_FALSE(rows[1].contains("activation_outlier_threshold"));
    // Unquantized weights with INT8 activations: compared with the reference like a scheme.
    EXPECT_EQ(rows[1]["bits_per_weight"], rows[0]["bits_per_weight"]);
    EXPECT_GT(rows[1]["kl_mean"].get<double>(), 0.0);
    EXPECT_EQ(rows[1]["agreement"]["positions"], 8 * 3);  // 8 windows of the text x 3 positions
    // The planted outlier makes one tensor-wide scale cost more than LLM.int8()'s split.
    EXPECT_GT(rows[1]["kl_mean"].get<double>(), rows[2]["kl_mean"].get<double>());
    EXPECT_EQ(rows[4]["bits_per_weight"], rows[3]["bits_per_weight"]);
}

TEST_F(EvalActivationsCliTest, TableNamesTheActivationsOfEachRow) {
    const auto r = testing::run_cli("eval -m " + path("model.gguf") + " --act int8:token -f " + path("text.txt") +
                                    " -c 64 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("activations"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("int8:token"), std::string::npos) << r.out;
}

TEST_F(EvalActivationsCliTest, BadActivationTextEndsWithAnErrorLine) {
    for (const char* act : {"int4:tensor", "llm.int8:-2"}) {
        const auto r = testing::run_cli("eval -m " + path("model.gguf") + " --act " + act + " -f " + path("text.txt") + " -c 64");
        EXPECT_EQ(r.exit_code, 1) << act;
        EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
        EXPECT_NE(r.err.find(act), std::string::npos) << r.err;
    }
}

}  // namespace
}  // namespace inferscope
