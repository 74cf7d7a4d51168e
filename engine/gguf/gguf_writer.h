#pragma once
// Writer for GGUF version 3 files: metadata in insertion order, tensor infos, then each
// tensor's data aligned to general.alignment. Used for synthetic models and exports.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "engine/gguf/gguf_value.h"

namespace inferscope {

class GgufWriter {
public:
    explicit GgufWriter(uint32_t alignment = 32);

    void set(const std::string& key, GgufValue value);  // replaces an existing key
    // dims[0] is the contiguous dimension; `data` must hold exactly the tensor's bytes.
    void add_tensor(const std::string& name, std::vector<uint64_t> dims, GgmlType type, std::vector<uint8_t> data);
    void add_f32_tensor(const std::string& name, std::vector<uint64_t> dims, std::span<const float> values);

    std::vector<uint8_t> to_bytes() const;
    // Writes to a temporary file next to `path` and renames it, so a failed write never
    // leaves a truncated model behind. Throws Error naming the path on failure.
    void write_file(const std::string& path) const;

private:
    std::vector<uint8_t> header_bytes() const;  // everything before the first tensor's data
    uint64_t padded(uint64_t bytes) const;

    struct Tensor {
        std::string name;
        std::vector<uint64_t> dims;
        GgmlType type;
        std::vector<uint8_t> data;
    };
    uint32_t alignment_;
    std::vector<std::pair<std::string, GgufValue>> metadata_;
    std::vector<Tensor> tensors_;
};

}  // namespace inferscope
