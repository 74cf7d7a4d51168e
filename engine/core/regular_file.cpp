#include "engine/core/regular_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/core/error.h"

namespace inferscope {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& problem, int error_number) {
    throw Error(path + ": " + problem + ": " + std::strerror(error_number));
}

}  // namespace

const char* special_file_kind(unsigned mode) {
    if (S_ISLNK(mode)) return "a symbolic link";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

int open_regular_file(const std::string& path, const std::string& what) {
    // O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        const int error_number = errno;
        if (error_number == ENOENT) throw Error(path + ": no such file");
        fail(path, "cannot open", error_number);
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        const int error_number = errno;
        ::close(fd);
        fail(path, "cannot inspect", error_number);
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        throw Error(path + ": is " + special_file_kind(info.st_mode) + ", not " + what);
    }
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) (void)::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return fd;
}

std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
    const int fd = open_regular_file(path, what);
    struct stat info {};
    (void)::fstat(fd, &info);
    const auto size = static_cast<uint64_t>(info.st_size);
    if (size > max_bytes) {
        ::close(fd);
        throw Error(path + ": is " + std::to_string(size) + " bytes; " + what + " may have at most " +
                    std::to_string(max_bytes));
    }
    std::string text;
    try {
        text.resize(static_cast<size_t>(size));
    } catch (...) {
        ::close(fd);
        throw;
    }
    size_t done = 0;
    while (done < text.size()) {
        const ssize_t got = ::read(fd, text.data() + done, text.size() - done);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            const int error_number = errno;
            ::close(fd);
            fail(path, "read failed", error_number);
        }
        if (got == 0) break;  // the file shrank while being read: what was there is the text
        done += static_cast<size_t>(got);
    }
    ::close(fd);
    text.resize(done);
    return text;
}

}  // namespace inferscope
