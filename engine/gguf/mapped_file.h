#pragma once
// A read-only memory mapping of a whole file. Model weights are used in place from the
// mapping and never copied into the process heap.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace inferscope {

class MappedFile {
public:
    // Throws Error naming the path when it does not exist, is a directory, cannot be read
    // or cannot be mapped.
    explicit MappedFile(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace inferscope
