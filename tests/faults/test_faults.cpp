// The programs under a failing disk (tests/faults/fault_io.cpp preloaded): every writer
// reports the failure, exits 1, and leaves each file whole (old or new) with no temporaries.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

#include "support/cli_runner.h"

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
        const CliRunResult r = run_command(with_faults(faults) + INFERSCOPE_CLI_PATH + " make-model --preset tiny-qwen2 --seed 7 -o " + model_);
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
    const CliRunResult r = run_command(with_faults("INFERSCOPE_FAULT_EINTR=1") + INFERSCOPE_CLI_PATH +
                                       " make-model --preset tiny-qwen2 -o " + copy);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(read(copy), original_model_);
}

TEST_F(FaultyDisk, AStepsFileThatFailsKeepsTheOldOne) {
    const fs::path steps = dir_ / "steps.jsonl";
    std::ofstream(steps) << "old steps\n";
    const CliRunResult r = run_command(with_faults("INFERSCOPE_FAULT_WRITE_BYTES=300") + INFERSCOPE_CLI_PATH +
                                       " generate -m " + model_ + " -p ab -n 8 --temp 0 --steps " + steps.string());
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
        // A file written again in this run is whole: it ends as its format ends.
        if (bytes == before.at(name)) continue;
        ++replaced;
        if (name.ends_with(".png")) EXPECT_NE(bytes.find("IEND"), std::string::npos) << name;
        if (name.ends_with(".svg")) EXPECT_NE(bytes.find("</svg>"), std::string::npos) << name;
        if (name.ends_with(".json")) EXPECT_EQ(bytes.back(), '\n') << name;
        EXPECT_FALSE(bytes.empty()) << name;
    }
    EXPECT_LT(replaced, static_cast<int>(after.size())) << "the disk filled up before the end of the export";
}

TEST_F(FaultyDisk, LostStandardOutputAndSpecialTargetsAreFailures) {
    const CliRunResult to_full = run_command(std::string(INFERSCOPE_CLI_PATH) + " info -m " + model_ + " >/dev/full");
    EXPECT_EQ(to_full.exit_code, 1);
    EXPECT_NE(to_full.err.find("cannot write the standard output: No space left on device"), std::string::npos) << to_full.err;
    const CliRunResult device = run_cli("make-model --preset tiny-qwen2 -o /dev/full");
    EXPECT_EQ(device.exit_code, 1);
    EXPECT_NE(device.err.find("/dev/full: is a device, not a regular file"), std::string::npos) << device.err;
    const CliRunResult steps = run_cli("generate -m " + model_ + " -p ab -n 2 --steps /dev/full");
    EXPECT_EQ(steps.exit_code, 1);
    EXPECT_NE(steps.err.find("/dev/full: is a device"), std::string::npos) << steps.err;
}

}  // namespace
}  // namespace inferscope
