#pragma once
// Reader for GGUF files (versions 2 and 3). The whole header is parsed and validated at
// open time; tensor data stays where the file is held (file_bytes.h) and is exposed as spans.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "engine/gguf/gguf_value.h"

namespace inferscope {

class FileBytes;

inline constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as little-endian uint32
inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr uint32_t kGgufMaxDims = 4;

// A tensor's extents, held inline (GGUF allows at most kGgufMaxDims): a header with a million
// tensor entries costs no allocation per entry.
class TensorDims {
public:
    TensorDims() = default;
    void push_back(uint64_t extent);  // std::length_error past kGgufMaxDims
    size_t size() const { return count_; }
    bool empty() const { return count_ == 0; }
    uint64_t operator[](size_t i) const { return extents_[i]; }
    const uint64_t* begin() const { return extents_.data(); }
    const uint64_t* end() const { return extents_.data() + count_; }
    std::vector<uint64_t> to_vector() const { return {begin(), end()}; }
    bool operator==(const TensorDims& other) const;

private:
    std::array<uint64_t, kGgufMaxDims> extents_{};
    uint32_t count_ = 0;
};

struct GgufTensorInfo {
    std::string name;
    TensorDims dims;  // dims[0] is the contiguous (row) dimension, as in ggml
    GgmlType type = GgmlType::F32;
    uint64_t offset = 0;         // from the start of the data section
    uint64_t element_count = 0;
    uint64_t byte_count = 0;
    std::span<const uint8_t> data;  // inside the held file
    uint64_t entry_offset = 0;      // where the tensor's entry starts in the header

    uint64_t rows() const;      // product of dims[1..]
    uint64_t row_length() const { return dims.empty() ? 0 : dims[0]; }
    std::string shape_string() const;  // "[896, 151936]"
};

struct GgufKeyValue {
    std::string key;
    GgufValue value;
    uint64_t offset = 0;  // where the pair starts in the file
};

class GgufFile {
public:
    // Reads (or maps, see file_bytes.h) and parses a file. Throws Error for a missing or
    // unreadable path and GgufError for anything malformed.
    static GgufFile open(const std::string& path);
    // Parses a buffer that the GgufFile takes over (used by tests and fuzzing).
    static GgufFile from_bytes(std::vector<uint8_t> bytes, const std::string& name);

    GgufFile(GgufFile&&) noexcept;
    GgufFile& operator=(GgufFile&&) noexcept;
    ~GgufFile();

    const std::string& path() const { return path_; }
    uint32_t version() const { return version_; }
    uint32_t alignment() const { return alignment_; }
    uint64_t file_size() const { return bytes_.size(); }
    // How an opened file's bytes are held ("mapped", "copied to 2 MiB pages"); "in memory"
    // for a buffer given to from_bytes.
    std::string holding_name() const;
    // True when the mapped file changed under us (see FileBytes::changed_on_disk).
    bool changed_on_disk() const;
    // 16 hex digits identifying the content: XXH3-64 of the size, the first and the last MiB
    // (a whole-file hash of a multi-GB model would cost a second pass over it).
    std::string content_fingerprint() const;
    uint64_t data_offset() const { return data_offset_; }

    const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
    const GgufValue* find(const std::string& key) const;
    uint64_t metadata_offset(const std::string& key) const;
    bool has(const std::string& key) const { return find(key) != nullptr; }

    // Typed getters: missing keys throw GgufError naming the key (or return the fallback);
    // a present key with an incompatible type throws GgufError naming key and types.
    std::string get_string(const std::string& key) const;
    std::string get_string(const std::string& key, const std::string& fallback) const;
    uint64_t get_u64(const std::string& key) const;
    uint64_t get_u64(const std::string& key, uint64_t fallback) const;
    double get_f64(const std::string& key) const;
    double get_f64(const std::string& key, double fallback) const;
    bool get_bool(const std::string& key, bool fallback) const;
    const GgufArray& get_array(const std::string& key) const;

    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(const std::string& name) const;

private:
    GgufFile() = default;
    void parse();
    [[noreturn]] void fail_key(const std::string& key, const std::string& problem) const;

    std::string path_;
    std::unique_ptr<FileBytes> held_;  // the bytes of an opened file (see file_bytes.h)
    std::vector<uint8_t> owned_bytes_;
    std::span<const uint8_t> bytes_;
    uint32_t version_ = 0;
    uint32_t alignment_ = kGgufDefaultAlignment;
    uint64_t data_offset_ = 0;
    // Positions sorted by name, searched by bisection: an index costs 4 bytes per entry, so
    // a header of a million entries stays within a few times its size.
    std::vector<GgufKeyValue> metadata_;
    std::vector<uint32_t> metadata_by_key_;
    std::vector<GgufTensorInfo> tensors_;
    std::vector<uint32_t> tensors_by_name_;
};

}  // namespace inferscope
