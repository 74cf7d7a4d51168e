// An LD_PRELOAD library that makes file I/O fail the way disks do, for the fault tests. It
// acts only on regular files (never on the terminal or a pipe, so error messages still come
// out), as the environment says:
//   INFERSCOPE_FAULT_WRITE_BYTES=N  writes succeed until N bytes have gone to regular files;
//                                   after that every write fails with INFERSCOPE_FAULT_ERRNO
//   INFERSCOPE_FAULT_ERRNO=name     ENOSPC (default), EIO or EDQUOT
//   INFERSCOPE_FAULT_FSYNC=1        fsync and fdatasync fail with INFERSCOPE_FAULT_ERRNO
//   INFERSCOPE_FAULT_RENAME=1       rename fails with INFERSCOPE_FAULT_ERRNO
//   INFERSCOPE_FAULT_EINTR=1        every other write is interrupted (EINTR) before writing,
//                                   and every write that goes through writes at most half
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

template <typename Fn>
Fn next_symbol(const char* name) {
    return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

bool flag(const char* name) {
    const char* value = std::getenv(name);
    return value != nullptr && std::strcmp(value, "1") == 0;
}

int fault_errno() {
    const char* name = std::getenv("INFERSCOPE_FAULT_ERRNO");
    if (name == nullptr || std::strcmp(name, "ENOSPC") == 0) return ENOSPC;
    if (std::strcmp(name, "EIO") == 0) return EIO;
    if (std::strcmp(name, "EDQUOT") == 0) return EDQUOT;
    return ENOSPC;
}

long long write_budget() {
    const char* value = std::getenv("INFERSCOPE_FAULT_WRITE_BYTES");
    return value == nullptr ? -1 : std::atoll(value);
}

bool is_regular_file(int fd) {
    struct stat info {};
    return ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
}

std::atomic<long long> bytes_written{0};
std::atomic<unsigned> writes_seen{0};

// How many of `count` bytes may go to fd now: -1 with errno set when the write must fail.
ssize_t allowed_bytes(int fd, size_t count) {
    if (count == 0 || !is_regular_file(fd)) return static_cast<ssize_t>(count);
    if (flag("INFERSCOPE_FAULT_EINTR")) {
        if (writes_seen.fetch_add(1) % 2 == 0) {
            errno = EINTR;
            return -1;
        }
        count = count > 1 ? count / 2 : count;
    }
    const long long budget = write_budget();
    if (budget >= 0) {
        const long long before = bytes_written.fetch_add(static_cast<long long>(count));
        if (before >= budget) {
            errno = fault_errno();
            return -1;
        }
        if (before + static_cast<long long>(count) > budget) count = static_cast<size_t>(budget - before);
    }
    return static_cast<ssize_t>(count);
}

// fsync and fdatasync fail alike when asked.
int sync_or_fail(int fd, int (*real)(int)) {
    if (flag("INFERSCOPE_FAULT_FSYNC") && is_regular_file(fd)) {
        errno = fault_errno();
        return -1;
    }
    return real(fd);
}

}  // namespace

extern "C" {

ssize_t write(int fd, const void* data, size_t count) {
    static const auto real = next_symbol<ssize_t (*)(int, const void*, size_t)>("write");
    const ssize_t allowed = allowed_bytes(fd, count);
    if (allowed < 0) return -1;
    return real(fd, data, static_cast<size_t>(allowed));
}

ssize_t writev(int fd, const struct iovec* parts, int n_parts) {
    static const auto real = next_symbol<ssize_t (*)(int, const struct iovec*, int)>("writev");
    size_t total = 0;
    for (int i = 0; i < n_parts; ++i) total += parts[i].iov_len;
    const ssize_t allowed = allowed_bytes(fd, total);
    if (allowed < 0) return -1;
    if (static_cast<size_t>(allowed) == total) return real(fd, parts, n_parts);
    // A shortened write goes out as the first `allowed` bytes of the first part.
    static const auto real_write = next_symbol<ssize_t (*)(int, const void*, size_t)>("write");
    return n_parts > 0 ? real_write(fd, parts[0].iov_base, std::min(static_cast<size_t>(allowed), parts[0].iov_len)) : 0;
}

int fsync(int fd) {
    static const auto real = next_symbol<int (*)(int)>("fsync");
    return sync_or_fail(fd, real);
}

int fdatasync(int fd) {
    static const auto real = next_symbol<int (*)(int)>("fdatasync");
    return sync_or_fail(fd, real);
}

int rename(const char* from, const char* to) {
    static const auto real = next_symbol<int (*)(const char*, const char*)>("rename");
    if (flag("INFERSCOPE_FAULT_RENAME")) {
        errno = fault_errno();
        return -1;
    }
    return real(from, to);
}

}  // extern "C"
