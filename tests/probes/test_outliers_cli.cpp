// `inferscope-cli outliers` end to end on a model with planted outlier dimensions: the JSON
// report, the text report, and bad input ending with "error: ..." and exit status 1.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

using CliResult = testing::CliRunResult;

class OutliersCliTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!fs::exists(testing::cli_path())) GTEST_SKIP() << "inferscope-cli is not built at " << testing::cli_path();
        dir_ = fs::temp_directory_path() / ("inferscope-outliers-cli-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        SyntheticModelSpec spec = testing::tiny_spec("qwen2");
        spec.outlier_dims = {9, 30};
        model_ = (dir_ / "planted.gguf").string();
        build_synthetic_model(spec).write_file(model_);
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }

    CliResult run(const std::string& args) const { return testing::run_cli(args); }

    void expect_error(const std::string& args, const std::string& needle) const {
        const CliResult r = run(args);
        EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.err;
        EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    }

    fs::path dir_;
    std::string model_;
};

TEST_F(OutliersCliTest, JsonReportFindsThePlantedDimensions) {
    const CliResult r = run("outliers -m " + model_ + " -p 'the planted dimensions should stand out' --top 2 --json -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["tensor"], "resid");
    ASSERT_EQ(j["layers"].size(), 2u);
    for (const auto& layer : j["layers"]) {
        std::vector<int> top = {layer["top"][0]["dim"].get<int>(), layer["top"][1]["dim"].get<int>()};
        std::sort(top.begin(), top.end());
        EXPECT_EQ(top, (std::vector<int>{9, 30}));
        const auto& bins = layer["histogram"];
        EXPECT_EQ(bins[0]["lower"], 0.0);
        EXPECT_EQ(bins[0]["upper"], 1.0);
        int64_t total = 0;
        for (size_t b = 0; b < bins.size(); ++b) {
            total += bins[b]["count"].get<int64_t>();
            if (b == 0) continue;
            EXPECT_EQ(bins[b]["lower"], bins[b - 1]["upper"]);
        }
        EXPECT_EQ(total, j["n_dims"].get<int64_t>());
    }
    const auto& int8 = j["int8"];
    EXPECT_EQ(int8["layer"], 1);
    EXPECT_NEAR(int8["tensor_scale"].get<double>() / int8["reduced_scale"].get<double>(), int8["scale_shrink_ratio"].get<double>(),
                1e-3);
    ASSERT_EQ(int8["schemes"].size(), 4u);
    EXPECT_EQ(int8["schemes"][0]["scheme"], "per_tensor");
    EXPECT_EQ(int8["schemes"][1]["scheme"], "per_tensor_excluding_top");
    ASSERT_EQ(int8["table"].size(), 4u);  // 2 top dimensions, the median and the smallest
    EXPECT_EQ(int8["table"][2]["role"], "median");
    const auto& median_levels = int8["table"][2]["levels_used"];
    EXPECT_GE(median_levels["per_channel"].get<int>(), median_levels["per_tensor"].get<int>());
    EXPECT_TRUE(int8["table"][0]["levels_used"]["per_tensor_excluding_top"].is_null());  // kept in float
    EXPECT_GE(int8["table"][0]["levels_used"]["per_tensor"].get<int>(), 1);
}

TEST_F(OutliersCliTest, TextReportNamesTheInt8LayerAndTensor) {
    const CliResult r = run("outliers -m " + model_ + " -p 'hello there' --tensor ffn_hidden --layer 0 -t 1");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("INT8 analysis of blk.0.ffn_hidden"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("log2 histogram"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("persistence"), std::string::npos) << r.out;
}

TEST_F(OutliersCliTest, BadInputEndsWithAnErrorMessage) {
    expect_error("outliers -m " + model_ + " -p hi --tensor residual", "unknown tensor \"residual\"");
    expect_error("outliers -m " + model_ + " -p hi --layer 7", "layer 7 is out of range");
    expect_error("outliers -m " + model_ + " -p ''", "prompt is empty");
    expect_error("outliers -m " + model_ + " -p 'a longer prompt than four tokens' -c 4", "more than the context size of 4");
}

}  // namespace
}  // namespace inferscope
