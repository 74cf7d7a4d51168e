// Reading a file the user named: regular files only, within a size limit.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace inferscope {
namespace {

namespace fs = std::filesystem;

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(RegularFile, ReadsWithinTheLimitAndRefusesTheRestByName) {
    const fs::path dir = fs::temp_directory_path() / ("inferscope-regular-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const fs::path text = dir / "text.txt";
    std::ofstream(text) << "twelve bytes";
    EXPECT_EQ(read_regular_file(text.string(), "a text file", 12), "twelve bytes");
    EXPECT_EQ(error_of([&] { read_regular_file(text.string(), "a text file", 11); }),
              text.string() + ": is 12 bytes; a text file may have at most 11");
    EXPECT_EQ(error_of([&] { read_regular_file(dir.string(), "a text file", 100); }),
              dir.string() + ": is a directory, not a text file");
    const fs::path fifo = dir / "fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    EXPECT_EQ(error_of([&] { read_regular_file(fifo.string(), "a text file", 100); }),
              fifo.string() + ": is a FIFO, not a text file");
    EXPECT_EQ(error_of([&] { read_regular_file((dir / "absent").string(), "a text file", 100); }),
              (dir / "absent").string() + ": no such file");
    fs::remove_all(dir);
}

}  // namespace
}  // namespace inferscope
