#include "engine/gguf/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/core/error.h"

namespace inferscope {

MappedFile::MappedFile(const std::string& path) : path_(path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        if (err == ENOENT) throw Error(path + ": no such file");
        throw Error(path + ": cannot open: " + std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        const int err = errno;
        ::close(fd);
        throw Error(path + ": cannot stat: " + std::strerror(err));
    }
    if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        throw Error(path + ": is a directory, not a model file");
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(path + ": is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* mapping = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
        if (mapping == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(path + ": cannot map " + std::to_string(size_) + " bytes: " + std::strerror(err));
        }
        data_ = static_cast<const uint8_t*>(mapping);
    }
    ::close(fd);  // the mapping keeps the file alive
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace inferscope
