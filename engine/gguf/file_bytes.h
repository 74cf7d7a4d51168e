#pragma once
// The bytes of a whole model file, read-only, for as long as the object lives.
//
// Decode reads every weight once per token, so how the bytes are held sets its speed. A
// memory mapping uses 4 KiB pages: a 1 GB model spans a quarter of a million of them, far
// more than the TLBs hold, and on a virtual machine each miss costs a two-level page walk.
// A copy in 2 MiB transparent huge pages needs 500: decode runs faster from it, and its
// reads do not drop to a fraction of the bandwidth for seconds at a time as 4 KiB pages'
// can. So the file is read into huge pages when the kernel offers them and memory
// allows, and mapped otherwise (a model larger than memory still runs, paged from disk).
// Either way the process holds the file once: the copy is read with pread, not through a
// mapping.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "engine/core/huge_page_buffer.h"
#include "engine/core/mapped_file_guard.h"

struct stat;

namespace inferscope {

enum class FileHolding { Mapped, HugePageCopy };

const char* file_holding_name(FileHolding holding);  // "mapped", "copied to 2 MiB pages"

struct FileHoldingInputs {
    std::string requested;           // INFERSCOPE_WEIGHTS: "map", "copy" or "" (automatic)
    std::string thp_enabled;         // /sys/kernel/mm/transparent_hugepage/enabled ("" if absent)
    uint64_t mem_available_bytes;    // MemAvailable of /proc/meminfo (0 if unknown)
    uint64_t file_bytes;
};

// Automatic: a copy when transparent huge pages are "always" or "madvise" and the copy
// leaves at least a quarter of the available memory (and 512 MiB) free; else the mapping.
// An explicit request wins. Throws InvalidArgument for an unknown request.
FileHolding choose_file_holding(const FileHoldingInputs& inputs);

class FileBytes {
public:
    // Holding chosen by choose_file_holding from this machine and INFERSCOPE_WEIGHTS. Throws
    // Error naming the path when it does not exist, is a directory, cannot be read or mapped.
    explicit FileBytes(const std::string& path);
    FileBytes(const std::string& path, FileHolding holding);
    ~FileBytes();
    FileBytes(const FileBytes&) = delete;
    FileBytes& operator=(const FileBytes&) = delete;

    std::span<const uint8_t> bytes() const { return {data_, size_}; }
    const std::string& path() const { return path_; }
    // What was done: a requested copy falls back to the mapping when the memory for it
    // cannot be allocated.
    FileHolding holding() const { return copy_.data() != nullptr ? FileHolding::HugePageCopy : FileHolding::Mapped; }
    // For a mapping: true when the file was truncated under it (a read faulted, see
    // mapped_file_guard.h) or its size or modification time differ from when it was mapped
    // (rewritten in place). A copy, or a file replaced by rename or deleted, is unaffected.
    bool changed_on_disk() const;

private:
    void load(std::optional<FileHolding> requested);  // nullopt: choose for this machine
    void map(int fd, const struct stat& st);  // st: the file's fstat, for changed_on_disk
    bool copy(int fd);

    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
    HugePageBuffer copy_;  // empty when mapped
    std::unique_ptr<MappedRangeGuard> guard_;  // set when mapped
    // The mapped file's identity and state when mapped.
    uint64_t device_ = 0, inode_ = 0;
    int64_t mtime_ns_ = 0;
};

}  // namespace inferscope
