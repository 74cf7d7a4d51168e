// AtomicFileWriter: a reader finds the old file or the whole new one, and a target that is
// not a regular file is refused before anything is written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

class AtomicFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("inferscope-atomic-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    static std::string read(const fs::path& path) {
        std::ifstream in(path, std::ios::binary);
        return {std::istreambuf_iterator<char>(in), {}};
    }
    static void write_plain(const fs::path& path, const std::string& text) {
        std::ofstream(path, std::ios::binary) << text;
    }
    size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {})); }

    static void expect_refused(const fs::path& path, const std::string& kind) {
        try {
            AtomicFileWriter writer(path.string());
            FAIL() << "expected " << path << " to be refused";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find(path.string() + ": is " + kind), std::string::npos) << e.what();
        }
    }

    fs::path dir_;
};

TEST_F(AtomicFile, ReplacesTheWholeFileAndKeepsItsPermissions) {
    const fs::path path = dir_ / "out.json";
    write_plain(path, "old content that is longer than the new one");
    ::chmod(path.c_str(), 0640);
    write_file_atomically(path.string(), "new");
    EXPECT_EQ(read(path), "new");
    struct stat info {};
    ASSERT_EQ(::stat(path.c_str(), &info), 0);
    EXPECT_EQ(info.st_mode & 0777, 0640u);
    EXPECT_EQ(entries(), 1u) << "no temporary is left beside the file";
}

TEST_F(AtomicFile, NothingChangesUntilCommitAndAnAbandonedWriteLeavesTheOldFile) {
    const fs::path path = dir_ / "model.gguf";
    write_plain(path, "old");
    {
        AtomicFileWriter writer(path.string());
        writer.write("partial new bytes");
        EXPECT_EQ(read(path), "old");
        EXPECT_EQ(entries(), 2u) << "the new bytes go to a temporary beside the target";
    }
    EXPECT_EQ(read(path), "old");
    EXPECT_EQ(entries(), 1u);
    AtomicFileWriter writer(path.string());
    writer.write("complete");
    writer.commit();
    EXPECT_EQ(read(path), "complete");
    EXPECT_THROW(writer.write("more"), Error);
    EXPECT_THROW(writer.commit(), Error);
}

TEST_F(AtomicFile, TargetsThatAreNotRegularFilesAreRefusedAndUntouched) {
    const fs::path victim = dir_ / "victim.txt";
    write_plain(victim, "keep me");
    const fs::path link = dir_ / "link.gguf";
    fs::create_symlink(victim, link);
    expect_refused(link, "a symbolic link");
    EXPECT_EQ(read(victim), "keep me");
    EXPECT_TRUE(fs::is_symlink(link));

    const fs::path folder = dir_ / "folder";
    fs::create_directory(folder);
    expect_refused(folder, "a directory");

    const fs::path fifo = dir_ / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    expect_refused(fifo, "a FIFO");
    expect_refused("/dev/null", "a device");
    EXPECT_EQ(entries(), 4u) << "nothing was created";
}

TEST_F(AtomicFile, ANameNearTheFileSystemsLimitStillGetsATemporary) {
    const fs::path path = dir_ / (std::string(250, 'n') + ".gguf");
    write_file_atomically(path.string(), "long");
    EXPECT_EQ(read(path), "long");
    EXPECT_EQ(entries(), 1u);
}

TEST_F(AtomicFile, AMissingFolderIsAClearError) {
    const fs::path path = dir_ / "absent" / "out.csv";
    try {
        write_file_atomically(path.string(), "x");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot create a file in " + (dir_ / "absent").string()), std::string::npos)
            << e.what();
    }
}

}  // namespace
}  // namespace inferscope
