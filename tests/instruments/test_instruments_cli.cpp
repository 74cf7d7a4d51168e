// The cache-vs-recompute, phases and kv commands end to end on a small synthetic model file:
// their JSON against the engine's numbers, and bad input ending with a clear message.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;
using testing::run_cli;

class InstrumentsCliTest : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-instruments-cli-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        model_ = (dir_ / "tiny.gguf").string();
        build_synthetic_model(testing::tiny_spec("qwen2")).write_file(model_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
    std::string model_;
};

void expect_failure(const testing::CliRunResult& r, const std::string& needle) {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("error: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
}

TEST_F(InstrumentsCliTest, CacheVsRecomputeJson) {
    const auto r = run_cli("cache-vs-recompute -m " + model_ + " -p 'hello world' -n 5 --kv-type f32 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["steps"].size(), 5u);
    EXPECT_TRUE(j["equivalence"]["tokens_identical"].get<bool>());
    const int p = j["n_prompt"].get<int>();
    const auto& last = j["steps"][4];
    EXPECT_EQ(last["cached"]["n_tokens"].get<int>(), 1);
    EXPECT_EQ(last["recomputed"]["n_tokens"].get<int>(), p + 4);
    EXPECT_EQ(last["recomputed"]["score_bytes_per_head"].get<uint64_t>(), uint64_t(p + 4) * (p + 4) * 4);
    EXPECT_GT(j["totals"]["macs_ratio"].get<double>(), 1.0);
    EXPECT_EQ(j["score_bytes_per_head_at_4096"]["recomputed"].get<uint64_t>(), 67108864u);
    EXPECT_EQ(j["score_bytes_per_head_at_4096"]["cached"].get<uint64_t>(), 16384u);
    expect_failure(run_cli("cache-vs-recompute -m " + model_ + " -c 8 -n 20"), "tokens of context");
}

TEST_F(InstrumentsCliTest, PhasesJsonAndRefusals) {
    const auto r = run_cli("phases -m " + model_ + " --prompt 4,16 --context 8 --decode-steps 2 -r 1 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j["prefill"].size(), 2u);
    EXPECT_EQ(j["prefill"][1]["n_prompt"].get<int>(), 16);
    ASSERT_EQ(j["decode"].size(), 1u);
    EXPECT_EQ(j["decode"][0]["context"].get<int>(), 8);
    EXPECT_GT(j["decode"][0]["tokens_per_s"].get<double>(), 0.0);
    // The tiny model's context is 256 tokens.
    expect_failure(run_cli("phases -m " + model_ + " --prompt 1024 --context 16"), "prompt length 1024 is beyond the context of 256");
    expect_failure(run_cli("phases -m " + model_ + " --prompt 16 --context 252"), "context length 252");
}

TEST_F(InstrumentsCliTest, KvJson) {
    const auto r = run_cli("kv -m " + model_ + " --tokens 37 --layout 2x10,4x5 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["formula_bytes_per_token"].get<double>(), 256.0);  // 2 x 2 layers x 2 KV heads x 16 x 2 bytes
    EXPECT_EQ(j["allocator"]["bytes_in_use"].get<double>(), j["formula_bytes"].get<double>());
    EXPECT_EQ(j["allocator"]["block_rounding_waste_bytes"].get<uint64_t>(), 11u * 256);
    EXPECT_EQ(j["layer_tensor_shape"], nlohmann::json({1, 2, 37, 16}));
    ASSERT_EQ(j["layouts"].size(), 2u);
    EXPECT_EQ(j["layouts"][1]["bytes"].get<double>(), 20 * 256.0);
    ASSERT_EQ(j["what_if"].size(), 3u);
    EXPECT_EQ(j["what_if"][0]["bytes_per_token"].get<double>(), 512.0);  // MHA: 4 KV heads
    expect_failure(run_cli("kv -m " + model_ + " --layout 32by2048"), "bad layout '32by2048'");
    expect_failure(run_cli("kv -m " + model_ + " --tokens 300"), "300 tokens do not fit");
}

TEST_F(InstrumentsCliTest, KvReportsOnePoolPerKindOfLayerUnlessTheFullCacheIsAsked) {
    const std::string gemma3 = (dir_ / "tiny-gemma3.gguf").string();
    build_synthetic_model(testing::tiny_spec("gemma3")).write_file(gemma3);
    const auto windowed = run_cli("kv -m " + gemma3 + " --tokens 60 --json");
    ASSERT_EQ(windowed.exit_code, 0) << windowed.err;
    const auto j = nlohmann::json::parse(windowed.out);
    ASSERT_EQ(j["pool_groups"].size(), 2u);
    EXPECT_EQ(j["pool_groups"][1]["group"], "local");
    EXPECT_EQ(j["pool_groups"][1]["window_tokens"].get<int>(), 5);
    EXPECT_LT(j["allocator"]["bytes_in_use"].get<double>(), j["formula_bytes"].get<double>());
    const auto full = run_cli("kv -m " + gemma3 + " --tokens 60 --kv-full-cache --json");
    ASSERT_EQ(full.exit_code, 0) << full.err;
    const auto f = nlohmann::json::parse(full.out);
    ASSERT_EQ(f["pool_groups"].size(), 1u);
    EXPECT_EQ(f["allocator"]["bytes_in_use"].get<double>(), f["formula_bytes"].get<double>());
}

}  // namespace
}  // namespace inferscope
