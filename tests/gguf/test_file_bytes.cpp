// How a model file's bytes are held (engine/gguf/file_bytes.h): the policy that picks a
// huge-page copy or a mapping, and both holdings giving back exactly the file's bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>

#include <chrono>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/file_bytes.h"
#include "engine/gguf/gguf_file.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;

TEST(FileHolding, AutomaticCopiesWhenHugePagesAreOfferedAndMemoryIsAmple) {
    EXPECT_EQ(choose_file_holding({"", "madvise", 20 * kGiB, 1 * kGiB}), FileHolding::HugePageCopy);
    EXPECT_EQ(choose_file_holding({"", "always", 20 * kGiB, 1 * kGiB}), FileHolding::HugePageCopy);
    // No huge pages to be had: copying would only spend memory and time.
    EXPECT_EQ(choose_file_holding({"", "never", 20 * kGiB, 1 * kGiB}), FileHolding::Mapped);
    EXPECT_EQ(choose_file_holding({"", "", 20 * kGiB, 1 * kGiB}), FileHolding::Mapped);
    // The copy must leave a quarter of the available memory, and at least 512 MiB.
    EXPECT_EQ(choose_file_holding({"", "madvise", 8 * kGiB, 6 * kGiB}), FileHolding::HugePageCopy);
    EXPECT_EQ(choose_file_holding({"", "madvise", 8 * kGiB, 6 * kGiB + 1}), FileHolding::Mapped);
    EXPECT_EQ(choose_file_holding({"", "madvise", 1 * kGiB, 512 * kMiB}), FileHolding::HugePageCopy);
    EXPECT_EQ(choose_file_holding({"", "madvise", 1 * kGiB, 512 * kMiB + 1}), FileHolding::Mapped);
    EXPECT_EQ(choose_file_holding({"", "madvise", 0, 8 * kMiB}), FileHolding::Mapped);  // memory unknown
    EXPECT_EQ(choose_file_holding({"", "madvise", 20 * kGiB, 40 * kGiB}), FileHolding::Mapped);  // larger than memory
    // Below one huge page there is nothing to gain.
    EXPECT_EQ(choose_file_holding({"", "madvise", 20 * kGiB, 2 * kMiB - 1}), FileHolding::Mapped);
    EXPECT_EQ(choose_file_holding({"", "madvise", 20 * kGiB, 2 * kMiB}), FileHolding::HugePageCopy);
}

TEST(FileHolding, ARequestWinsAndAnUnknownOneIsRejected) {
    EXPECT_EQ(choose_file_holding({"map", "madvise", 20 * kGiB, 1 * kGiB}), FileHolding::Mapped);
    EXPECT_EQ(choose_file_holding({"copy", "never", 1 * kGiB, 4 * kMiB}), FileHolding::HugePageCopy);
    try {
        choose_file_holding({"hugepages", "madvise", 20 * kGiB, 1 * kGiB});
        FAIL() << "an unknown request was accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("INFERSCOPE_WEIGHTS=hugepages"), std::string::npos) << e.what();
    }
}

class FileBytesTest : public ::testing::Test {
protected:
    fs::path write_file(const std::string& name, size_t size) {
        const fs::path path = fs::temp_directory_path() / ("inferscope-file-bytes-" + std::to_string(::getpid()) + "-" + name);
        std::vector<char> bytes(size);
        std::mt19937 rng(static_cast<uint32_t>(size));
        for (char& b : bytes) b = static_cast<char>(rng());
        std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        written_.push_back(path);
        contents_[path.string()] = std::move(bytes);
        return path;
    }
    const std::vector<char>& contents(const fs::path& path) { return contents_[path.string()]; }
    void TearDown() override {
        for (const fs::path& p : written_) fs::remove(p);
    }

private:
    std::vector<fs::path> written_;
    std::map<std::string, std::vector<char>> contents_;
};

TEST_F(FileBytesTest, BothHoldingsGiveTheFileByteForByte) {
    // Not a multiple of the 2 MiB page: the copy's last page is partly past the file.
    for (const size_t size : {size_t{1}, size_t{4097}, size_t{3 * kMiB + 123}}) {
        const fs::path path = write_file(std::to_string(size), size);
        for (const FileHolding holding : {FileHolding::Mapped, FileHolding::HugePageCopy}) {
            SCOPED_TRACE(std::string(file_holding_name(holding)) + ", " + std::to_string(size) + " bytes");
            const FileBytes file(path.string(), holding);
            EXPECT_EQ(file.holding(), holding);
            ASSERT_EQ(file.bytes().size(), size);
            EXPECT_TRUE(std::equal(file.bytes().begin(), file.bytes().end(),
                                   reinterpret_cast<const uint8_t*>(contents(path).data())));
            EXPECT_EQ(file.path(), path.string());
        }
    }
}

TEST_F(FileBytesTest, AMappedFileTruncatedUnderUsReadsZerosAndSaysItChanged) {
    const size_t size = 64 * 1024;
    const fs::path path = write_file("truncated", size);
    const FileBytes mapped(path.string(), FileHolding::Mapped);
    const FileBytes copied(path.string(), FileHolding::HugePageCopy);
    EXPECT_FALSE(mapped.changed_on_disk());
    fs::resize_file(path, 4096);
    // Without the guard this read ends the process with SIGBUS.
    const volatile uint8_t* past_the_end = mapped.bytes().data() + size - 1;
    EXPECT_EQ(*past_the_end, 0);
    EXPECT_TRUE(mapped.changed_on_disk());
    EXPECT_EQ(mapped.bytes()[100], static_cast<uint8_t>(contents(path)[100])) << "pages still in the file are kept";
    EXPECT_FALSE(copied.changed_on_disk()) << "a copy does not depend on the file";
    EXPECT_TRUE(std::equal(copied.bytes().begin(), copied.bytes().end(), reinterpret_cast<const uint8_t*>(contents(path).data())));
}

// The guard takes only faults inside its ranges: a SIGBUS sent to the process still ends it
// (by SIGBUS itself, or by the abort of a sanitizer's handler that was there before).
TEST_F(FileBytesTest, ASentSigbusIsNotSwallowedByTheMappingGuard) {
    const fs::path path = write_file("guarded", 8192);
    EXPECT_DEATH(
        {
            const FileBytes mapped(path.string(), FileHolding::Mapped);
            std::raise(SIGBUS);
            std::exit(0);
        },
        "");
}

TEST_F(FileBytesTest, AMappedFileRewrittenInPlaceSaysItChangedAndAReplacedOneDoesNot) {
    const fs::path path = write_file("rewritten", 8192);
    {
        const FileBytes mapped(path.string(), FileHolding::Mapped);
        const fs::path replacement = write_file("replacement", 8192);
        fs::rename(replacement, path);  // a new file under the old name: the mapping keeps the old one
        EXPECT_FALSE(mapped.changed_on_disk());
    }
    const FileBytes mapped(path.string(), FileHolding::Mapped);
    std::ofstream(path, std::ios::binary | std::ios::in | std::ios::out).write("changed", 7);
    const auto later = fs::last_write_time(path) + std::chrono::seconds(1);
    fs::last_write_time(path, later);  // a coarse clock may not have moved since the mapping
    EXPECT_TRUE(mapped.changed_on_disk());
}

TEST_F(FileBytesTest, AnEmptyFileHasNoBytesEitherWay) {
    const fs::path path = write_file("empty", 0);
    for (const FileHolding holding : {FileHolding::Mapped, FileHolding::HugePageCopy}) {
        const FileBytes file(path.string(), holding);
        EXPECT_TRUE(file.bytes().empty());
    }
}

TEST_F(FileBytesTest, MissingFilesAndDirectoriesAreNamed) {
    const std::string missing = (fs::temp_directory_path() / "inferscope-no-such-model.gguf").string();
    for (const FileHolding holding : {FileHolding::Mapped, FileHolding::HugePageCopy}) {
        try {
            FileBytes file(missing, holding);
            FAIL() << "a missing file was opened";
        } catch (const Error& e) {
            EXPECT_EQ(std::string(e.what()), missing + ": no such file");
        }
        try {
            FileBytes file(fs::temp_directory_path().string(), holding);
            FAIL() << "a directory was opened";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
        }
    }
}

// INFERSCOPE_WEIGHTS reaches the automatic choice, and GgufFile reports how it holds a file.
TEST_F(FileBytesTest, TheEnvironmentChoosesAndGgufFileSaysWhich) {
    const std::vector<uint8_t> model = testing::tiny_model_bytes(testing::tiny_spec("llama"));
    const fs::path path = write_file("model.gguf", 0);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(model.data()), static_cast<std::streamsize>(model.size()));
    struct Restore {
        ~Restore() { ::unsetenv("INFERSCOPE_WEIGHTS"); }
    } restore;
    ::setenv("INFERSCOPE_WEIGHTS", "copy", 1);
    EXPECT_EQ(FileBytes(path.string()).holding(), FileHolding::HugePageCopy);
    EXPECT_EQ(GgufFile::open(path.string()).holding_name(), "copied to 2 MiB pages");
    ::setenv("INFERSCOPE_WEIGHTS", "map", 1);
    EXPECT_EQ(FileBytes(path.string()).holding(), FileHolding::Mapped);
    EXPECT_EQ(GgufFile::open(path.string()).holding_name(), "mapped");
    ::setenv("INFERSCOPE_WEIGHTS", "hugepages", 1);
    EXPECT_THROW(GgufFile::open(path.string()), InvalidArgument);
    EXPECT_EQ(GgufFile::from_bytes(model, "buffer").holding_name(), "in memory");
}

}  // namespace
}  // namespace inferscope
