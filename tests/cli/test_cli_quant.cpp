// inferscope-cli quant, quantize and eval end to end on tiny synthetic models: JSON and CSV
// outputs, the written GGUF, and bad input that ends with `error: ...` and exit code 1.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/model/model.h"
#include "support/cli_runner.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

using CliRun = testing::CliRunResult;

class QuantCliTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-quant-cli-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        SyntheticModelSpec spec = testing::tiny_spec("llama");
        spec.n_embd = 256;  // every scheme fits: rows of 256 and 512
        spec.n_head = 8;
        spec.n_head_kv = 4;
        spec.n_ff = 512;
        build_synthetic_model(spec).write_file(path("model.gguf"));
    }
    void TearDown() override { fs::remove_all(dir_); }
    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    CliRun run(const std::string& args) const { return testing::run_cli(args); }
    fs::path dir_;
};

TEST_F(QuantCliTest, QuantJsonReportsEveryMatrixAndScheme) {
    const CliRun r = run("quant -m " + path("model.gguf") + " -s int4:g128 -s nf4 -s q4_k --json -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["matrix_count"], 14);
    EXPECT_EQ(j["matrices"].size(), 14u);
    EXPECT_EQ(j["schemes"].size(), 3u);
    EXPECT_DOUBLE_EQ(j["schemes"][0]["bits_per_weight"].get<double>(), 4.125);
    EXPECT_DOUBLE_EQ(j["schemes"][1]["bits_per_weight"].get<double>(), 4.25);
    EXPECT_EQ(j["schemes"][0]["execution"], "dequantized F32");
    EXPECT_EQ(j["schemes"][2]["execution"], "packed Q4_K blocks");
    EXPECT_GT(j["matrices"][0]["schemes"]["nf4"]["relative_error"].get<double>(), 0.0);
    EXPECT_TRUE(j["schemes"][0]["model_size"].contains("GiB"));
    EXPECT_NE(r.err.find("14/14"), std::string::npos) << r.err;  // progress on stderr
}

TEST_F(QuantCliTest, QuantCsvHasOneRowPerMatrixAndScheme) {
    const CliRun r = run("quant -m " + path("model.gguf") + " -s int8:row -s q8_0 --csv --ksigma 4");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("matrix,rows,cols,", 0), 0u);
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 14 * 2);
    EXPECT_NE(r.out.find("blk.1.ffn_down.weight,256,512,F32,"), std::string::npos);
}

TEST_F(QuantCliTest, QuantizeWritesAModelThatLoads) {
    const CliRun r = run("quantize -m " + path("model.gguf") + " -s q6_k -o " + path("q6.gguf"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("as Q6_K"), std::string::npos) << r.out;
    const auto model = Model::load(path("q6.gguf"));
    EXPECT_EQ(model->layers()[0].w_gate.type, GgmlType::Q6_K);
    EXPECT_EQ(model->token_embedding().type, GgmlType::F32);
}

TEST_F(QuantCliTest, EvalPrintsOneRowPerSchemeAndTheReference) {
    {
        std::ofstream text(path("text.txt"));
        for (int i = 0; i < 60; ++i) text << "the quick brown fox jumps over the lazy dog " << i << ". ";
        std::ofstream battery(path("battery.txt"));
        battery << "max_tokens: 4\nQ: the quick\nA: brown\nQ: lazy\nA: dog\n";
    }
    const CliRun r = run("eval -m " + path("model.gguf") + " -s int8:row -s q4_0 -f " + path("text.txt") +
                         " -c 64 --agreement 3 --battery " + path("battery.txt") + " --json -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["rows"].size(), 3u);
    EXPECT_EQ(j["rows"][0]["scheme"], "reference");
    EXPECT_EQ(j["rows"][1]["scheme"], "int8:row");
    EXPECT_EQ(j["rows"][2]["execution"], "packed Q4_0 blocks");
    EXPECT_EQ(j["rows"][0]["agreement"]["positions"], 6);
    EXPECT_EQ(j["rows"][1]["agreement"]["positions"], 6);
    EXPECT_GE(j["rows"][1]["kl_mean"].get<double>(), 0.0);
    EXPECT_EQ(j["rows"][2]["battery_greedy"]["total"], 2);
    EXPECT_EQ(j["rows"][2]["battery_repeat_penalty"]["repeat_penalty"].get<double>(), 1.1f);
}

TEST_F(QuantCliTest, BadInputEndsWithAnErrorLine) {
    const std::string model = " -m " + path("model.gguf");
    for (const std::string& args : {"quant" + model + " -s int9:row", "quant" + model + " -s int4:g100",
                                    "quantize" + model + " -s nf4 -o " + path("x.gguf"),
                                    "quant" + model + " -s int4:row --csv --json"}) {
        SCOPED_TRACE(args);
        const CliRun r = run(args);
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
    }
    EXPECT_FALSE(fs::exists(path("x.gguf")));
}

}  // namespace
}  // namespace inferscope
