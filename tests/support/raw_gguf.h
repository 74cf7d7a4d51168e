#pragma once
// GGUF bytes written field by field, for tests that need files the writer refuses to make
// (wrong counts, impossible shapes, bad offsets).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"

namespace inferscope::testing {

class RawGguf {
public:
    RawGguf& u32(uint32_t v) { return put(v); }
    RawGguf& u64(uint64_t v) { return put(v); }
    RawGguf& u8(uint8_t v) { return put(v); }
    RawGguf& str(const std::string& s) {
        u64(s.size());
        bytes_.insert(bytes_.end(), s.begin(), s.end());
        return *this;
    }
    RawGguf& header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
        return u32(kGgufMagic).u32(version).u64(n_tensors).u64(n_kv);
    }
    // A tensor info: name, dims, type id, offset.
    RawGguf& tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
        str(name).u32(static_cast<uint32_t>(dims.size()));
        for (uint64_t d : dims) u64(d);
        return u32(type).u64(offset);
    }
    RawGguf& pad(size_t alignment = 32) {
        while (bytes_.size() % alignment) bytes_.push_back(0);
        return *this;
    }
    RawGguf& zeros(size_t n) {
        bytes_.resize(bytes_.size() + n, 0);
        return *this;
    }
    std::vector<uint8_t> bytes() const { return bytes_; }

private:
    template <typename T>
    RawGguf& put(T v) {
        const auto* p = reinterpret_cast<const uint8_t*>(&v);
        bytes_.insert(bytes_.end(), p, p + sizeof v);
        return *this;
    }
    std::vector<uint8_t> bytes_;
};

}  // namespace inferscope::testing
