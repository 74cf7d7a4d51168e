// inferscope-cli with --backend vulkan end to end: devices, generate equal to the CPU (also
// for qwen3 and gemma3), generate, spec, chat and serve warming up before their first request,
// and bench with a given device bandwidth as its floor and its per-step submission counts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "gpu/vk_tuning.h"
#include "gpu/vulkan_devices.h"
#include "support/cli_runner.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

using testing::run_cli;

class GpuCli : public ::testing::Test {
protected:
    void SetUp() override {
        try {
            gpu::choose_vulkan_device();
        } catch (const Error& e) {
            GTEST_SKIP() << "no usable Vulkan device (install Mesa's lavapipe): " << e.what();
        }
    }
};

TEST_F(GpuCli, DevicesListsTheChosenDevice) {
    const auto r = run_cli("devices --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    const int chosen = j["chosen"].get<int>();
    ASSERT_GE(chosen, 0);
    const auto& device = j["devices"][static_cast<size_t>(chosen)];
    EXPECT_TRUE(device["chosen"].get<bool>());
    EXPECT_TRUE(device["features"]["storage_16bit"].get<bool>());
    EXPECT_FALSE(device["heaps"].empty());
    // The kernel tuning the backend would use: one of the listed entries, a CPU driver's own.
    const std::string tuning = device["kernel_tuning"]["name"].get<std::string>();
    const auto& entries = j["kernel_tunings"];
    EXPECT_NE(std::find(entries.begin(), entries.end(), tuning), entries.end()) << tuning;
    if (device["type"] == "cpu" && std::getenv("INFERSCOPE_VK_TUNING") == nullptr) {
        EXPECT_EQ(tuning, "cpu-driver");
        EXPECT_GT(device["compute_units"].get<unsigned>(), 0u) << "a CPU driver's host threads";
    }
    EXPECT_GT(device["kernel_tuning"]["attention_workgroups"].get<unsigned>(), 0u);
    EXPECT_GE(device["max_shared_memory_bytes"].get<unsigned>(), 16384u) << "Vulkan's minimum";
    // Integer dot products only where the device has them (and subgroup arithmetic), and on
    // this device (lavapipe has both) whenever the entry asks for them.
    const bool integer_dot = device["kernel_tuning"]["matvec_integer_dot"].get<bool>();
    if (integer_dot) {
        EXPECT_TRUE(device["features"]["integer_dot_product"].get<bool>());
        EXPECT_TRUE(device["features"]["subgroup_arithmetic"].get<bool>());
    }
    const bool device_can = device["features"]["integer_dot_product"].get<bool>() &&
                            device["features"]["subgroup_arithmetic"].get<bool>() &&
                            device["subgroup_size"].get<unsigned>() <= 64;
    const char* forced = std::getenv("INFERSCOPE_VK_INTEGER_DOT");
    const bool asked = forced != nullptr ? std::string(forced) == "1" : gpu::kernel_tuning_named(tuning).matvec_integer_dot;
    if (device_can) {
        EXPECT_EQ(integer_dot, asked) << tuning;
    }
}

TEST_F(GpuCli, AnUnknownKernelTuningIsRefusedByName) {
    const char* before = std::getenv("INFERSCOPE_VK_TUNING");
    const std::string saved = before != nullptr ? before : "";
    setenv("INFERSCOPE_VK_TUNING", "fastest", 1);
    const auto r = run_cli("devices");
    if (before != nullptr) {
        setenv("INFERSCOPE_VK_TUNING", saved.c_str(), 1);
    } else {
        unsetenv("INFERSCOPE_VK_TUNING");
    }
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("unknown Vulkan kernel tuning 'fastest'"), std::string::npos) << r.err;
}

TEST_F(GpuCli, GenerateOnVulkanEqualsCpu) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::string args = "generate -m " + testing::shared_model("stories260K.gguf").string() +
                             " -p 'Once upon a time' -n 24 --temp 0 --backend ";
    const auto cpu = run_cli(args + "cpu");
    const auto gpu = run_cli(args + "vulkan");
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    EXPECT_EQ(gpu.out, cpu.out);
    EXPECT_NE(gpu.err.find("Vulkan ("), std::string::npos) << gpu.err;
    // The kernels were compiled before the prompt was timed, and the run says how long that took.
    EXPECT_NE(gpu.err.find("warm-up: the GPU's kernels compiled and run once in "), std::string::npos) << gpu.err;
    EXPECT_EQ(cpu.err.find("warm-up"), std::string::npos) << cpu.err;
}

// spec times a draft against its target: both sessions warm up before either is timed.
TEST_F(GpuCli, SpecWarmsUpTheTargetAndTheDraft) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::string model = testing::shared_model("stories260K.gguf").string();
    const auto r = run_cli("spec -m " + model + " --draft " + model + " -p 'Once upon a time' -n 4 --backend vulkan");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t warm_ups = 0;
    for (size_t at = r.err.find("warm-up: the GPU's kernels"); at != std::string::npos;
         at = r.err.find("warm-up: the GPU's kernels", at + 1)) {
        ++warm_ups;
    }
    EXPECT_EQ(warm_ups, 2u) << r.err;
}

// chat and serve warm up before their first turn or request: the warm-up's line comes before the
// one that opens the conversation or says where the server listens.
TEST_F(GpuCli, ChatAndServeWarmUpBeforeTheyTakeInput) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    namespace fs = std::filesystem;
    const fs::path model = fs::temp_directory_path() / ("inferscope-gpu-chat-" + std::to_string(::getpid()) + ".gguf");
    const auto made =
        run_cli("make-model --preset tiny-qwen3 --vocab " +
                testing::shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string() + " --chat-template " +
                testing::shared_model("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja").string() + " -o " + model.string());
    ASSERT_EQ(made.exit_code, 0) << made.err;
    const std::string warm_up_line = "warm-up: the GPU's kernels compiled and run once in ";

    const auto chat = testing::run_command("printf 'hello\\n' | " + testing::cli_path() + " chat -m " + model.string() +
                                           " --backend vulkan -n 2 --temp 0");
    EXPECT_EQ(chat.exit_code, 0) << chat.err;
    EXPECT_LT(chat.err.find(warm_up_line), chat.err.find("chat with ")) << chat.err;
    EXPECT_NE(chat.err.find("[turn 1: "), std::string::npos) << chat.err;

    // The server runs until stopped: it is stopped once it says where it listens, has exited, or
    // after 1,500 polls (five minutes) without either.
    const fs::path log = fs::path(model).replace_extension(".log");
    const auto serve = testing::run_command(
        "{ " + testing::cli_path() + " serve -m " + model.string() + " --backend vulkan --port 0 2>" + log.string() +
        " & pid=$!; for poll in $(seq 1500); do grep -q ' on http' " + log.string() +
        " || ! kill -0 $pid 2>/dev/null && break; sleep 0.2; done; kill -TERM $pid; wait $pid; code=$?; cat " + log.string() +
        " >&2; exit $code; }");
    fs::remove(model);
    fs::remove(log);
    EXPECT_EQ(serve.exit_code, 0) << serve.err;
    const size_t listening = serve.err.find(" on http://127.0.0.1:");
    ASSERT_NE(listening, std::string::npos) << serve.err;
    EXPECT_LT(serve.err.find(warm_up_line), listening) << serve.err;
}

// Architectures with per-head Q/K norms (qwen3), and with GeGLU, post-norms, embedding
// scaling and sliding-window layers (gemma3): the same greedy tokens as the CPU.
TEST_F(GpuCli, GenerateModernArchitecturesOnVulkanEqualsCpu) {
    for (const char* file : {"modern/qwen3-tiny.gguf", "modern/gemma3-tiny.gguf"}) {
        INFERSCOPE_REQUIRE_SHARED_FILE(file);
        const std::string args = "generate -m " + testing::shared_model(file).string() +
                                 " -p 'The quick brown fox' -n 8 --temp 0 --backend ";
        const auto cpu = run_cli(args + "cpu");
        const auto gpu = run_cli(args + "vulkan");
        ASSERT_EQ(gpu.exit_code, 0) << file << ": " << gpu.err;
        EXPECT_EQ(gpu.out, cpu.out) << file;
    }
}

TEST_F(GpuCli, BenchFloorComesFromTheGivenBandwidth) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto r = run_cli("bench -m " + testing::shared_model("stories260K.gguf").string() +
                           " --backend vulkan -p 8 -n 4 -r 1 --membw-gbs 100 --membw --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = nlohmann::json::parse(r.out);
    ASSERT_EQ(rows.at(0)["test"], "membw") << r.out;
    EXPECT_EQ(rows[0]["source"], "given");
    EXPECT_DOUBLE_EQ(rows[0]["read_bytes_per_s"].get<double>(), 100e9);
    bool saw_decode = false;
    for (const auto& row : rows) {
        if (row["test"] == "membw") continue;
        EXPECT_EQ(row["backend"].get<std::string>().rfind("Vulkan (", 0), 0u);
        if (row["n_generate"].get<int>() == 0) continue;
        saw_decode = true;
        // floor = bandwidth / bytes read per decode token, with the bandwidth as given.
        EXPECT_DOUBLE_EQ(row["floor_tokens_per_s"].get<double>(), 100e9 / row["bytes_read_per_token"].get<double>());
        EXPECT_GT(row["tokens_per_s_mean"].get<double>(), 0.0);
        // Each decode step's submission: the same recording replayed after the first step.
        ASSERT_TRUE(row.contains("device_step")) << row.dump();
        const auto& step = row["device_step"];
        EXPECT_GT(step["dispatches"].get<double>(), 0.0);
        EXPECT_GE(step["barriers"].get<double>(), step["dispatches"].get<double>());
        EXPECT_GE(step["steps"].get<int>(), 4);
        EXPECT_GT(step["replayed_steps"].get<int>(), 0);
        EXPECT_LT(step["replayed_steps"].get<int>(), step["steps"].get<int>() + 1);
        EXPECT_TRUE(step.contains("host_record_ms"));
    }
    EXPECT_TRUE(saw_decode);
}

TEST_F(GpuCli, BenchFloorOnVulkanIsTheDevicesMeasuredReadBandwidth) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const auto r = run_cli("bench -m " + testing::shared_model("stories260K.gguf").string() +
                           " --backend vulkan -p 0 -n 4 -r 1 --membw --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto rows = nlohmann::json::parse(r.out);
    ASSERT_GE(rows.size(), 2u) << r.out;
    ASSERT_EQ(rows[0]["test"], "membw") << rows[0].dump();
    EXPECT_EQ(rows[0]["source"], "device read");
    const double device_bytes_per_s = rows[0]["read_bytes_per_s"].get<double>();
    EXPECT_GT(device_bytes_per_s, 0.0);
    std::printf("[ measured ] %s reads %.2f GB/s\n", rows[1]["backend"].get<std::string>().c_str(), device_bytes_per_s / 1e9);
    const auto& decode = rows[1];
    ASSERT_EQ(decode["n_generate"].get<int>(), 4) << decode.dump();
    EXPECT_DOUBLE_EQ(decode["floor_tokens_per_s"].get<double>(),
                     device_bytes_per_s / decode["bytes_read_per_token"].get<double>());
}

}  // namespace
}  // namespace inferscope
