#include "engine/gguf/gguf_writer.h"

#include <cstring>

#include "engine/core/atomic_file.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"

namespace inferscope {
namespace {

class ByteSink {
public:
    explicit ByteSink(std::vector<uint8_t>& out) : out_(out) {}
    template <typename T>
    void put(T value) {
        const auto* p = reinterpret_cast<const uint8_t*>(&value);
        out_.insert(out_.end(), p, p + sizeof(T));
    }
    void put_string(const std::string& s) {
        put<uint64_t>(s.size());
        out_.insert(out_.end(), s.begin(), s.end());
    }
    void pad_to(uint64_t alignment) {
        while (out_.size() % alignment != 0) out_.push_back(0);
    }

private:
    std::vector<uint8_t>& out_;
};

void put_value(ByteSink& sink, const GgufValue& value) {
    switch (value.type()) {
        case GgufType::UINT8: sink.put<uint8_t>(static_cast<uint8_t>(value.as_u64())); break;
        case GgufType::INT8: sink.put<int8_t>(static_cast<int8_t>(value.as_i64())); break;
        case GgufType::UINT16: sink.put<uint16_t>(static_cast<uint16_t>(value.as_u64())); break;
        case GgufType::INT16: sink.put<int16_t>(static_cast<int16_t>(value.as_i64())); break;
        case GgufType::UINT32: sink.put<uint32_t>(static_cast<uint32_t>(value.as_u64())); break;
        case GgufType::INT32: sink.put<int32_t>(static_cast<int32_t>(value.as_i64())); break;
        case GgufType::UINT64: sink.put<uint64_t>(value.as_u64()); break;
        case GgufType::INT64: sink.put<int64_t>(value.as_i64()); break;
        case GgufType::FLOAT32: sink.put<float>(static_cast<float>(value.as_f64())); break;
        case GgufType::FLOAT64: sink.put<double>(value.as_f64()); break;
        case GgufType::BOOL: sink.put<uint8_t>(value.as_bool() ? 1 : 0); break;
        case GgufType::STRING: sink.put_string(value.as_string()); break;
        case GgufType::ARRAY: {
            const auto& array = value.as_array();
            sink.put<uint32_t>(static_cast<uint32_t>(array.element_type()));
            sink.put<uint64_t>(array.size());
            for (size_t i = 0; i < array.size(); ++i) put_value(sink, array.at(i));
            break;
        }
    }
}

}  // namespace

GgufWriter::GgufWriter(uint32_t alignment) : alignment_(alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        throw InvalidArgument("GGUF alignment must be a power of two, got " + std::to_string(alignment));
    }
    if (alignment != kGgufDefaultAlignment) set("general.alignment", GgufValue::u32(alignment));
}

void GgufWriter::set(const std::string& key, GgufValue value) {
    for (auto& [k, v] : metadata_) {
        if (k == key) {
            v = std::move(value);
            return;
        }
    }
    metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::add_tensor(const std::string& name, std::vector<uint64_t> dims, GgmlType type,
                            std::vector<uint8_t> data) {
    uint64_t elements = 1;
    for (uint64_t d : dims) elements *= d;
    const auto& traits = ggml_type_traits(type);
    if (dims.empty() || dims.size() > kGgufMaxDims || dims[0] % traits.block_elements != 0) {
        throw InvalidArgument("tensor \"" + name + "\": bad shape for type " + std::string(traits.name));
    }
    const uint64_t expected = elements / traits.block_elements * traits.block_bytes;
    if (data.size() != expected) {
        throw InvalidArgument("tensor \"" + name + "\": " + std::to_string(data.size()) + " bytes given, " +
                              std::to_string(expected) + " expected");
    }
    for (const auto& t : tensors_) {
        if (t.name == name) throw InvalidArgument("duplicate tensor name \"" + name + "\"");
    }
    tensors_.push_back({name, std::move(dims), type, std::move(data)});
}

void GgufWriter::add_f32_tensor(const std::string& name, std::vector<uint64_t> dims, std::span<const float> values) {
    std::vector<uint8_t> bytes(values.size_bytes());
    std::memcpy(bytes.data(), values.data(), bytes.size());
    add_tensor(name, std::move(dims), GgmlType::F32, std::move(bytes));
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
    std::vector<uint8_t> out;
    ByteSink sink(out);
    sink.put<uint32_t>(kGgufMagic);
    sink.put<uint32_t>(3);
    sink.put<uint64_t>(tensors_.size());
    sink.put<uint64_t>(metadata_.size());
    for (const auto& [key, value] : metadata_) {
        sink.put_string(key);
        sink.put<uint32_t>(static_cast<uint32_t>(value.type()));
        put_value(sink, value);
    }
    uint64_t offset = 0;
    for (const auto& t : tensors_) {
        sink.put_string(t.name);
        sink.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
        for (uint64_t d : t.dims) sink.put<uint64_t>(d);
        sink.put<uint32_t>(static_cast<uint32_t>(t.type));
        sink.put<uint64_t>(offset);
        offset += padded(t.data.size());
    }
    sink.pad_to(alignment_);
    return out;
}

uint64_t GgufWriter::padded(uint64_t bytes) const { return (bytes + alignment_ - 1) / alignment_ * alignment_; }

std::vector<uint8_t> GgufWriter::to_bytes() const {
    std::vector<uint8_t> out = header_bytes();
    for (const auto& t : tensors_) {
        out.insert(out.end(), t.data.begin(), t.data.end());
        out.resize(out.size() + (padded(t.data.size()) - t.data.size()), 0);
    }
    return out;
}

void GgufWriter::write_file(const std::string& path) const {
    AtomicFileWriter out(path);
    const std::vector<uint8_t> header = header_bytes();
    out.write(header.data(), header.size());
    const std::vector<uint8_t> zeros(alignment_, 0);
    for (const auto& t : tensors_) {
        out.write(t.data.data(), t.data.size());
        out.write(zeros.data(), padded(t.data.size()) - t.data.size());
    }
    out.commit();
}

}  // namespace inferscope
