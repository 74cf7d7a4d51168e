#include "engine/gguf/file_bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/core/system_memory.h"

namespace inferscope {
namespace {

constexpr size_t kHugePageBytes = HugePageBuffer::kPageBytes;
constexpr uint64_t kMinFreeAfterCopyBytes = uint64_t{512} << 20;

// The selected mode of the kernel's transparent huge pages: the word in brackets of
// "always [madvise] never".
std::string selected_thp_mode() {
    std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string line;
    if (!std::getline(in, line)) return "";
    const auto open = line.find('[');
    const auto close = line.find(']', open);
    if (open == std::string::npos || close == std::string::npos) return "";
    return line.substr(open + 1, close - open - 1);
}

FileHolding holding_for_this_machine(uint64_t file_bytes) {
    const char* requested = std::getenv("INFERSCOPE_WEIGHTS");
    return choose_file_holding({requested != nullptr ? requested : "", selected_thp_mode(), available_memory_bytes(), file_bytes});
}

[[noreturn]] void fail_errno(const std::string& path, const std::string& what, int err) {
    throw Error(path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

const char* file_holding_name(FileHolding holding) {
    return holding == FileHolding::HugePageCopy ? "copied to 2 MiB pages" : "mapped";
}

FileHolding choose_file_holding(const FileHoldingInputs& in) {
    if (in.requested == "map") return FileHolding::Mapped;
    if (in.requested == "copy") return FileHolding::HugePageCopy;
    if (!in.requested.empty()) {
        throw InvalidArgument("INFERSCOPE_WEIGHTS=" + in.requested + " is not one of map, copy");
    }
    const bool huge_pages = in.thp_enabled == "always" || in.thp_enabled == "madvise";
    const uint64_t left = in.mem_available_bytes > in.file_bytes ? in.mem_available_bytes - in.file_bytes : 0;
    const bool fits = left >= std::max(kMinFreeAfterCopyBytes, in.mem_available_bytes / 4);
    return huge_pages && fits && in.file_bytes >= kHugePageBytes ? FileHolding::HugePageCopy : FileHolding::Mapped;
}

FileBytes::FileBytes(const std::string& path) : path_(path) { load(std::nullopt); }

FileBytes::FileBytes(const std::string& path, FileHolding holding) : path_(path) { load(holding); }

void FileBytes::load(std::optional<FileHolding> requested) {
    const int fd = open_regular_file(path_, "a model file");
    try {
        struct stat st {};
        if (::fstat(fd, &st) != 0) fail_errno(path_, "cannot stat", errno);
        size_ = static_cast<size_t>(st.st_size);
        if (size_ > 0) {
            const FileHolding wanted = requested.has_value() ? *requested : holding_for_this_machine(size_);
            if (wanted != FileHolding::HugePageCopy || !copy(fd)) map(fd, st);
        }
    } catch (...) {
        ::close(fd);
        throw;
    }
    ::close(fd);  // a mapping keeps the file alive; a copy no longer needs it
}

FileBytes::~FileBytes() {
    guard_.reset();
    if (data_ != nullptr && copy_.data() == nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void FileBytes::map(int fd, const struct stat& st) {
    void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (mapping == MAP_FAILED) fail_errno(path_, "cannot map " + std::to_string(size_) + " bytes", errno);
    data_ = static_cast<const uint8_t*>(mapping);
    try {
        guard_ = std::make_unique<MappedRangeGuard>(mapping, size_);
    } catch (...) {
        ::munmap(mapping, size_);
        data_ = nullptr;
        throw;
    }
    device_ = static_cast<uint64_t>(st.st_dev);
    inode_ = static_cast<uint64_t>(st.st_ino);
    mtime_ns_ = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}

bool FileBytes::changed_on_disk() const {
    if (!guard_) return false;
    if (guard_->faulted()) return true;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0) return false;  // deleted: the mapping keeps the old file
    if (static_cast<uint64_t>(st.st_dev) != device_ || static_cast<uint64_t>(st.st_ino) != inode_) return false;
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
    return static_cast<size_t>(st.st_size) != size_ || mtime_ns != mtime_ns_;
}

// False when the memory cannot be reserved (the caller maps the file instead).
bool FileBytes::copy(int fd) {
    try {
        copy_ = HugePageBuffer(size_);
    } catch (const CapacityError&) {
        return false;
    }
    for (size_t done = 0; done < size_;) {
        const ssize_t got = ::pread(fd, copy_.data() + done, size_ - done, static_cast<off_t>(done));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
            const int err = got < 0 ? errno : 0;
            copy_ = HugePageBuffer();
            if (err == 0) {
                throw Error(path_ + ": the file ended after " + std::to_string(done) + " of " + std::to_string(size_) +
                            " bytes while being read");
            }
            fail_errno(path_, "cannot read", err);
        }
        done += static_cast<size_t>(got);
    }
    copy_.make_read_only();  // the weights are never written
    data_ = copy_.data();
    return true;
}

}  // namespace inferscope
