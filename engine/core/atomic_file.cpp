#include "engine/core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"

namespace inferscope {
namespace {

std::string system_reason(int error_number) { return std::strerror(error_number); }

std::string directory_of(const std::string& path) {
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    return parent.empty() ? std::string(".") : parent.string();
}

// A name in the target's directory that nobody else uses: the target's name, hidden, with a
// random tag, created with O_EXCL|O_NOFOLLOW so that whatever already has the name is refused.
int create_temporary(const std::string& path, std::string& temp_path) {
    std::random_device entropy;
    const std::filesystem::path target(path);
    for (int attempt = 0; attempt < 64; ++attempt) {
        char tag[17];
        std::snprintf(tag, sizeof tag, "%08x%08x", entropy(), entropy());
        // A name near the file system's 255-byte limit gets a short temporary name instead.
        const std::string name = target.filename().string();
        const std::string temp_name = name.size() + 26 <= 255 ? "." + name + "." + tag + ".partial" : ".partial." + std::string(tag);
        temp_path = (target.parent_path() / temp_name).string();
        const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST) return fd;
    }
    errno = EEXIST;
    return -1;
}

}  // namespace

void require_regular_file_target(const std::string& path) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        if (errno == ENOENT) return;
        throw Error(path + ": cannot inspect the output path: " + system_reason(errno));
    }
    if (!S_ISREG(info.st_mode)) {
        throw Error(path + ": is " + special_file_kind(info.st_mode) +
                    ", not a regular file; outputs are written only to regular files");
    }
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw Error("an output path is empty");
    require_regular_file_target(path_);
    fd_ = create_temporary(path_, temp_path_);
    if (fd_ < 0) {
        throw Error(path_ + ": cannot create a file in " + directory_of(path_) + ": " + system_reason(errno));
    }
    // A replaced file keeps its permissions; a new one gets 0666 less the umask from open().
    struct stat existing {};
    if (::stat(path_.c_str(), &existing) == 0) (void)::fchmod(fd_, existing.st_mode & 07777);
}

AtomicFileWriter::~AtomicFileWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
}

void AtomicFileWriter::fail(const std::string& what, int error_number) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_path_.empty()) ::unlink(temp_path_.c_str());
    temp_path_.clear();
    throw Error(path_ + ": " + what + ": " + system_reason(error_number));
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
    if (fd_ < 0) throw Error(path_ + ": written after it was committed or failed");
    const auto* next = static_cast<const char*>(data);
    while (bytes > 0) {
        const ssize_t written = ::write(fd_, next, bytes);
        if (written < 0) {
            if (errno == EINTR) continue;
            fail("write failed", errno);
        }
        if (written == 0) fail("write failed", EIO);
        next += written;
        bytes -= static_cast<size_t>(written);
    }
}

void AtomicFileWriter::commit() {
    if (fd_ < 0) throw Error(path_ + ": committed twice or after a failure");
    if (::fsync(fd_) != 0) fail("cannot sync the written data to disk", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("cannot close the written file", errno);
    if (::rename(temp_path_.c_str(), path_.c_str()) != 0) fail("cannot move the written file into place", errno);
    temp_path_.clear();
    // The rename itself reaches the disk with the directory; a failure here loses nothing.
    const int directory = ::open(directory_of(path_).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (directory >= 0) {
        (void)::fsync(directory);
        ::close(directory);
    }
}

void write_file_atomically(const std::string& path, std::string_view bytes) {
    AtomicFileWriter writer(path);
    writer.write(bytes);
    writer.commit();
}

}  // namespace inferscope
