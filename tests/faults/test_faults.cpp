// The programs under a failing disk (tests/faults/fault_io.cpp preloaded): every writer
// reports the failure, exits 1, and leaves each file whole (old or new) with no temporaries.
// And the app killed in the middle of an export: each file whole or absent. And the CLI on a
// Vulkan driver that gives its GPU up (tests/faults/fault_vulkan.cpp preloaded).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "support/cli_runner.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;
using testing::CliRunResult;
using testing::run_cli;
using testing::run_command;

std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), {}};
}

std::map<std::string, std::string> folder_contents(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& entry : fs::directory_iterator(dir)) files[entry.path().filename().string()] = read(entry.path());
    return files;
}

// A file as its format ends when written to the end.
void expect_whole(const std::string& name, const std::string& bytes) {
    ASSERT_FALSE(bytes.empty()) << name;
    if (name.ends_with(".png")) {
        EXPECT_NE(bytes.find("IEND"), std::string::npos) << name;
    } else if (name.ends_with(".svg")) {
        EXPECT_NE(bytes.find("</svg>"), std::string::npos) << name;
    } else if (name.ends_with(".json") || name.ends_with(".csv")) {
        EXPECT_EQ(bytes.back(), '\n') << name;
    }
}

// Runs the app headlessly with `args` and `out_dir` last. With `kill_at_files`, sends it
// SIGKILL as soon as `out_dir` holds that many entries (unless it ends first). Returns the
// exit status, -1 when killed, -2 when it could not start.
int run_app(const std::vector<std::string>& args, const fs::path& out_dir, std::optional<size_t> kill_at_files) {
    std::vector<std::string> argv_strings = {"env", "QT_QPA_PLATFORM=offscreen", INFERSCOPE_APP_PATH};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    argv_strings.push_back(out_dir.string());
    argv_strings.push_back("--quit");
    std::vector<char*> argv;
    for (auto& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    pid_t pid = -1;
    const int spawned = posix_spawnp(&pid, "env", &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) return -2;
    int status = 0;
    bool ended = false;
    while (kill_at_files && !(ended = waitpid(pid, &status, WNOHANG) == pid)) {
        std::error_code error;
        const auto entries = fs::exists(out_dir, error) ? std::distance(fs::directory_iterator(out_dir, error), {}) : 0;
        if (static_cast<size_t>(entries) >= *kill_at_files) {
            kill(pid, SIGKILL);
            break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (!ended) waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether files in `dir` can be written unnamed and linked into place (O_TMPFILE), as
// QSaveFile does where it can; without it a killed write leaves Qt's named temporary.
bool supports_unnamed_temporaries(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_TMPFILE | O_WRONLY, 0600);
    if (fd < 0) return false;
    ::close(fd);
    return true;
}

std::string with_faults(const std::string& settings) {
    return "env LD_PRELOAD=" + std::string(INFERSCOPE_FAULT_IO_PATH) + " " + settings + " ";
}

class FaultyDisk : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-faults-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
        model_ = (dir_ / "model.gguf").string();
        const CliRunResult made = run_cli("make-model --preset tiny-qwen2 -o " + model_);
        ASSERT_EQ(made.exit_code, 0) << made.err;
        original_model_ = read(model_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // make-model over the existing model under the given faults: refused, the old file intact.
    void expect_model_kept(const std::string& faults, const std::string& message) {
        const CliRunResult r =
            run_command(with_faults(faults) + testing::cli_path() + " make-model --preset tiny-qwen2 --seed 7 -o " + model_);
        EXPECT_EQ(r.exit_code, 1) << faults;
        EXPECT_NE(r.err.find(model_ + ": " + message), std::string::npos) << r.err;
        EXPECT_EQ(read(model_), original_model_) << faults;
        EXPECT_EQ(folder_contents(dir_).size(), 1u) << "a temporary was left behind under " << faults;
    }

    fs::path dir_;
    std::string model_;
    std::string original_model_;
};

TEST_F(FaultyDisk, AModelWriterThatFailsKeepsTheOldFile) {
    expect_model_kept("INFERSCOPE_FAULT_WRITE_BYTES=4096", "write failed: No space left on device");
    expect_model_kept("INFERSCOPE_FAULT_WRITE_BYTES=0 INFERSCOPE_FAULT_ERRNO=EIO", "write failed: Input/output error");
    expect_model_kept("INFERSCOPE_FAULT_FSYNC=1 INFERSCOPE_FAULT_ERRNO=EIO", "cannot sync the written data to disk");
    expect_model_kept("INFERSCOPE_FAULT_RENAME=1", "cannot move the written file into place");
}

TEST_F(FaultyDisk, InterruptedAndShortWritesStillWriteEveryByte) {
    const std::string copy = (dir_ / "copy.gguf").string();
    const CliRunResult r =
        run_command(with_faults("INFERSCOPE_FAULT_EINTR=1") + testing::cli_path() + " make-model --preset tiny-qwen2 -o " + copy);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read(copy), original_model_);
}

TEST_F(FaultyDisk, AStepsFileThatFailsKeepsTheOldOne) {
    const fs::path steps = dir_ / "steps.jsonl";
    std::ofstream(steps) << "old steps\n";
    const CliRunResult r = run_command(with_faults("INFERSCOPE_FAULT_WRITE_BYTES=300") + testing::cli_path() + " generate -m " +
                                       model_ + " -p ab -n 8 --temp 0 --steps " + steps.string());
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(steps.string() + ": write failed: No space left on device"), std::string::npos) << r.err;
    EXPECT_EQ(read(steps), "old steps\n");
    EXPECT_EQ(folder_contents(dir_).size(), 2u);
}

TEST_F(FaultyDisk, TheAppsExportLeavesEveryFileWholeOrAbsent) {
    if (std::string(INFERSCOPE_APP_PATH).empty()) GTEST_SKIP() << "the desktop app is not built (INFERSCOPE_ENGINE_ONLY)";
    const fs::path exports = dir_ / "charts";
    const std::string app = std::string("env QT_QPA_PLATFORM=offscreen ") + INFERSCOPE_APP_PATH + " --model " + model_ +
                            " --generate 4 --export-all " + exports.string() + " --quit";
    const CliRunResult good = run_command(app);
    ASSERT_EQ(good.exit_code, 0) << good.err;
    const std::map<std::string, std::string> before = folder_contents(exports);
    ASSERT_GE(before.size(), 8u);

    const CliRunResult full = run_command(with_faults("INFERSCOPE_FAULT_WRITE_BYTES=20000") + app.substr(4));
    EXPECT_EQ(full.exit_code, 1);
    EXPECT_NE(full.err.find("writing failed: No space left on device"), std::string::npos) << full.err;
    const std::map<std::string, std::string> after = folder_contents(exports);
    ASSERT_EQ(after.size(), before.size()) << "no temporaries, nothing missing";
    int replaced = 0;
    for (const auto& [name, bytes] : after) {
        ASSERT_TRUE(before.count(name)) << name;
        if (bytes == before.at(name)) continue;
        ++replaced;
        expect_whole(name, bytes);
    }
    EXPECT_LT(replaced, static_cast<int>(after.size())) << "the disk filled up before the end of the export";
}

// The app killed (SIGKILL) in the middle of exporting every chart, on a sound disk.
class KilledApp : public FaultyDisk {};

// Whatever was written is whole, and nothing else is there.
TEST_F(KilledApp, AnExportKilledAtAnyPointLeavesEveryFileWholeOrAbsent) {
    if (std::string(INFERSCOPE_APP_PATH).empty()) GTEST_SKIP() << "the desktop app is not built (INFERSCOPE_ENGINE_ONLY)";
    if (!supports_unnamed_temporaries(dir_)) {
        GTEST_SKIP() << dir_ << " does not support O_TMPFILE: a killed QSaveFile leaves its named temporary there";
    }
    const std::vector<std::string> args = {"--model", model_, "--generate", "4", "--export-all"};
    const fs::path reference = dir_ / "reference";
    ASSERT_EQ(run_app(args, reference, std::nullopt), 0);
    const std::map<std::string, std::string> complete = folder_contents(reference);
    ASSERT_GE(complete.size(), 8u);

    int killed_midway = 0;
    for (const size_t files : {size_t{1}, complete.size() / 4, complete.size() / 2, complete.size() * 3 / 4, complete.size() - 1}) {
        const fs::path exports = dir_ / ("killed-at-" + std::to_string(files));
        const int status = run_app(args, exports, files);
        ASSERT_NE(status, -2) << "the app could not be started";
        const std::map<std::string, std::string> written = fs::exists(exports) ? folder_contents(exports) : decltype(written){};
        if (status == -1 && !written.empty() && written.size() < complete.size()) ++killed_midway;
        for (const auto& [name, bytes] : written) {
            EXPECT_TRUE(complete.count(name)) << name << " is not an export (a temporary left behind?)";
            expect_whole(name, bytes);
        }
    }
    EXPECT_GE(killed_midway, 3) << "the kills did not land in the middle of the export";
}

TEST_F(FaultyDisk, LostStandardOutputAndSpecialTargetsAreFailures) {
    const CliRunResult to_full = run_command(testing::cli_path() + " info -m " + model_ + " >/dev/full");
    EXPECT_EQ(to_full.exit_code, 1);
    EXPECT_NE(to_full.err.find("cannot write the standard output: No space left on device"), std::string::npos) << to_full.err;
    const CliRunResult device = run_cli("make-model --preset tiny-qwen2 -o /dev/full");
    EXPECT_EQ(device.exit_code, 1);
    EXPECT_NE(device.err.find("/dev/full: is a device, not a regular file"), std::string::npos) << device.err;
    const CliRunResult steps = run_cli("generate -m " + model_ + " -p ab -n 2 --steps /dev/full");
    EXPECT_EQ(steps.exit_code, 1);
    EXPECT_NE(steps.err.find("/dev/full: is a device"), std::string::npos) << steps.err;
}

// The CLI on the Vulkan backend whose driver gives the GPU up after a chosen number of fence
// waits: counted first in an unharmed run of the same command, so the loss lands where meant.
class LostGpu : public ::testing::Test {
protected:
    void SetUp() override {
        if (std::string(INFERSCOPE_FAULT_VULKAN_PATH).empty()) GTEST_SKIP() << "built without the Vulkan backend";
        const CliRunResult devices = run_cli("devices");
        if (devices.exit_code != 0) GTEST_SKIP() << "no usable Vulkan device (install Mesa's lavapipe): " << devices.err;
        INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
        dir_ = fs::temp_directory_path() / ("inferscope-lost-gpu-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
        model_ = (dir_ / "chat.gguf").string();
        // Weights of a larger spread than a preset's, so that its replies are varied text.
        const CliRunResult made =
            run_cli("make-model --preset tiny-qwen3 --weight-std 0.3 --vocab " +
                    testing::shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string() + " --chat-template " +
                    testing::shared_model("chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja").string() + " -o " + model_);
        ASSERT_EQ(made.exit_code, 0) << made.err;
        std::ofstream(dir_ / "two-turns.txt") << "Hello there\nTell me more\n";
        std::ofstream(dir_ / "no-turns.txt") << "";
    }
    void TearDown() override { fs::remove_all(dir_); }

    // `args` under the preloaded driver fault, the GPU lost after `waits` fence waits (never: -1).
    CliRunResult run_lost_after(const std::string& args, long long waits) const {
        std::string env = "env LD_PRELOAD=" + std::string(INFERSCOPE_FAULT_VULKAN_PATH) + " ";
        if (waits >= 0) env += "INFERSCOPE_FAULT_VK_LOST_AFTER_WAITS=" + std::to_string(waits) + " ";
        return run_command(env + testing::cli_path() + " " + args);
    }
    static long long fence_waits(const CliRunResult& r) {
        const size_t at = r.err.rfind("fault_vulkan: ");
        return at == std::string::npos ? -1 : std::atoll(r.err.c_str() + at + std::strlen("fault_vulkan: "));
    }
    std::string chat(const std::string& backend, const std::string& input) const {
        return "chat -m " + model_ + " --backend " + backend + " -n 6 --temp 0 < " + (dir_ / input).string();
    }

    // `serve` under the fault, stopped once it listens or has exited; with `request`, it is
    // first sent a completion over bash's /dev/tcp, whose raw response goes to stdout, and given
    // 30 s to exit by itself. stderr: the server's.
    CliRunResult serve_lost_after(long long waits, bool request) const {
        const fs::path script = dir_ / "serve.sh";
        std::ofstream(script) << R"(log="$DIR/serve.log"
env LD_PRELOAD="$FAULT" $LOST "$CLI" serve -m "$MODEL" --backend vulkan --port 0 2>"$log" & pid=$!
for poll in $(seq 1500); do grep -q ' on http' "$log" || ! kill -0 $pid 2>/dev/null && break; sleep 0.2; done
port=$(sed -n 's|.* on http://127.0.0.1:\([0-9]*\).*|\1|p' "$log" | head -n 1)
if [ "$REQUEST" = 1 ] && [ -n "$port" ]; then
  body='{"prompt":"hello","max_tokens":4}'
  exec 3<>"/dev/tcp/127.0.0.1/$port"
  printf 'POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s' ${#body} "$body" >&3
  cat <&3
  exec 3<&-
  for poll in $(seq 150); do kill -0 $pid 2>/dev/null || break; sleep 0.2; done
fi
kill -TERM $pid 2>/dev/null; wait $pid; code=$?; cat "$log" >&2; exit $code
)";
        std::string env = "env DIR=" + dir_.string() + " FAULT=" + INFERSCOPE_FAULT_VULKAN_PATH + " CLI=" + testing::cli_path() +
                          " MODEL=" + model_ + " REQUEST=" + (request ? "1" : "0");
        if (waits >= 0) env += " LOST=INFERSCOPE_FAULT_VK_LOST_AFTER_WAITS=" + std::to_string(waits);
        return run_command(env + " bash " + script.string());
    }

    fs::path dir_;
    std::string model_;
};

// Lost in the middle of a reply, the chat asks that turn again on the CPU and continues there: its
// replies are the CPU's, after whatever the lost turn had printed.
TEST_F(LostGpu, AChatContinuesOnTheCpuAndAnswersTheLostTurnThere) {
    const CliRunResult on_cpu = run_cli(chat("cpu", "two-turns.txt"));
    ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.err;
    const long long load_waits = fence_waits(run_lost_after(chat("vulkan", "no-turns.txt"), -1));
    const long long all_waits = fence_waits(run_lost_after(chat("vulkan", "two-turns.txt"), -1));
    ASSERT_GT(load_waits, 0);
    ASSERT_GT(all_waits, load_waits + 4) << "a reply's steps wait on fences";

    const CliRunResult lost = run_lost_after(chat("vulkan", "two-turns.txt"), load_waits + 2);
    ASSERT_EQ(lost.exit_code, 0) << lost.err;
    EXPECT_NE(lost.err.find("device lost"), std::string::npos) << lost.err;
    EXPECT_NE(lost.err.find("the chat continues on the CPU backend"), std::string::npos) << lost.err;
    EXPECT_NE(lost.err.find("[turn 2:"), std::string::npos) << lost.err;
    ASSERT_FALSE(on_cpu.out.empty());
    EXPECT_TRUE(lost.out.ends_with(on_cpu.out)) << "lost:\n" << lost.out << "\non the CPU:\n" << on_cpu.out;
}

// Lost while the model is made ready on the GPU (its upload, its warm-up): the chat starts on
// the CPU.
TEST_F(LostGpu, AChatWhoseGpuIsLostAtLoadStartsOnTheCpu) {
    const CliRunResult on_cpu = run_cli(chat("cpu", "two-turns.txt"));
    ASSERT_EQ(on_cpu.exit_code, 0) << on_cpu.err;
    const CliRunResult lost = run_lost_after(chat("vulkan", "two-turns.txt"), 1);
    ASSERT_EQ(lost.exit_code, 0) << lost.err;
    EXPECT_NE(lost.err.find("the chat continues on the CPU backend"), std::string::npos) << lost.err;
    EXPECT_EQ(lost.out, on_cpu.out);
}

// A one-shot command stops with the error, saying what to do, instead of crashing or hanging.
TEST_F(LostGpu, AGenerationStopsWithAnErrorSayingWhatToDo) {
    const std::string generate = "generate -m " + model_ + " --backend vulkan -p hello --temp 0";
    const long long first_token_waits = fence_waits(run_lost_after(generate + " -n 1", -1));
    ASSERT_GT(first_token_waits, 0);
    const CliRunResult lost = run_lost_after(generate + " -n 8", first_token_waits + 1);
    EXPECT_EQ(lost.exit_code, 1) << lost.err;
    EXPECT_NE(lost.err.find("device lost (its driver gave the GPU up"), std::string::npos) << lost.err;
    EXPECT_NE(lost.err.find("the CPU backend at once"), std::string::npos) << lost.err;
}

// A server whose GPU is lost answers the request that met it with a 500 naming the loss, and
// exits 1 with the error, so that a supervisor restarts it, instead of failing every later request.
TEST_F(LostGpu, AServerStopsWithTheErrorAndStatus1) {
    const long long startup_waits = fence_waits(serve_lost_after(-1, false));
    ASSERT_GT(startup_waits, 0);
    const CliRunResult lost = serve_lost_after(startup_waits, true);
    EXPECT_EQ(lost.exit_code, 1) << lost.err;
    EXPECT_NE(lost.out.find("HTTP/1.1 500"), std::string::npos) << lost.out;
    EXPECT_NE(lost.out.find("device lost (its driver gave the GPU up"), std::string::npos) << lost.out;
    EXPECT_NE(lost.err.find("error: Vulkan: vkWaitForFences failed: device lost"), std::string::npos) << lost.err;
}

}  // namespace
}  // namespace inferscope
