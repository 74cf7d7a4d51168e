#include "engine/gguf/gguf_value.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "engine/core/error.h"

namespace inferscope {

std::string_view gguf_type_name(GgufType type) {
    switch (type) {
        case GgufType::UINT8: return "uint8";
        case GgufType::INT8: return "int8";
        case GgufType::UINT16: return "uint16";
        case GgufType::INT16: return "int16";
        case GgufType::UINT32: return "uint32";
        case GgufType::INT32: return "int32";
        case GgufType::FLOAT32: return "float32";
        case GgufType::BOOL: return "bool";
        case GgufType::STRING: return "string";
        case GgufType::ARRAY: return "array";
        case GgufType::UINT64: return "uint64";
        case GgufType::INT64: return "int64";
        case GgufType::FLOAT64: return "float64";
    }
    return "unknown";
}

bool gguf_type_is_valid(uint32_t type_id) { return type_id <= static_cast<uint32_t>(GgufType::FLOAT64); }

GgufValue GgufValue::string_array(const std::vector<std::string>& values) {
    return GgufValue::array(GgufArray::of_strings(values));
}

GgufValue GgufValue::f32_array(const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return GgufValue::array(GgufArray::of_scalar_bytes(GgufType::FLOAT32, std::move(bytes)));
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(int32_t));
    if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
    return GgufValue::array(GgufArray::of_scalar_bytes(GgufType::INT32, std::move(bytes)));
}

size_t gguf_scalar_bytes(GgufType type) {
    switch (type) {
        case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
        case GgufType::UINT16: case GgufType::INT16: return 2;
        case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
        case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
        case GgufType::STRING: case GgufType::ARRAY: return 0;
    }
    return 0;
}

namespace {

template <typename T>
T load(const uint8_t* at) {
    T value;
    std::memcpy(&value, at, sizeof(T));
    return value;
}

template <typename T>
void store(std::vector<uint8_t>& bytes, T value) {
    const size_t at = bytes.size();
    bytes.resize(at + sizeof(T));
    std::memcpy(bytes.data() + at, &value, sizeof(T));
}

void append_scalar(std::vector<uint8_t>& bytes, GgufType type, const GgufValue& v) {
    switch (type) {
        case GgufType::UINT8: store<uint8_t>(bytes, static_cast<uint8_t>(v.as_u64())); break;
        case GgufType::INT8: store<int8_t>(bytes, static_cast<int8_t>(v.as_i64())); break;
        case GgufType::UINT16: store<uint16_t>(bytes, static_cast<uint16_t>(v.as_u64())); break;
        case GgufType::INT16: store<int16_t>(bytes, static_cast<int16_t>(v.as_i64())); break;
        case GgufType::UINT32: store<uint32_t>(bytes, static_cast<uint32_t>(v.as_u64())); break;
        case GgufType::INT32: store<int32_t>(bytes, static_cast<int32_t>(v.as_i64())); break;
        case GgufType::FLOAT32: store<float>(bytes, static_cast<float>(v.as_f64())); break;
        case GgufType::BOOL: store<uint8_t>(bytes, v.as_bool() ? 1 : 0); break;
        case GgufType::UINT64: store<uint64_t>(bytes, v.as_u64()); break;
        case GgufType::INT64: store<int64_t>(bytes, v.as_i64()); break;
        case GgufType::FLOAT64: store<double>(bytes, v.as_f64()); break;
        case GgufType::STRING: case GgufType::ARRAY: break;
    }
}

}  // namespace

GgufArray::GgufArray(GgufType element_type, const std::vector<GgufValue>& items) : element_type_(element_type) {
    for (const GgufValue& item : items) {
        if (item.type() != element_type) {
            throw InvalidArgument("an array of " + std::string(gguf_type_name(element_type)) + " cannot hold a " +
                                  std::string(gguf_type_name(item.type())));
        }
        if (element_type == GgufType::STRING) {
            strings_.push_back(item.as_string());
        } else if (element_type == GgufType::ARRAY) {
            arrays_.push_back(item);
        } else {
            append_scalar(scalar_bytes_, element_type, item);
        }
    }
}

GgufArray GgufArray::of_scalar_bytes(GgufType element_type, std::vector<uint8_t> bytes) {
    GgufArray array;
    array.element_type_ = element_type;
    array.scalar_bytes_ = std::move(bytes);
    return array;
}

GgufArray GgufArray::of_strings(std::vector<std::string> strings) {
    GgufArray array;
    array.element_type_ = GgufType::STRING;
    array.strings_ = std::move(strings);
    return array;
}

GgufArray GgufArray::of_arrays(std::vector<GgufValue> arrays) {
    GgufArray array;
    array.element_type_ = GgufType::ARRAY;
    array.arrays_ = std::move(arrays);
    return array;
}

size_t GgufArray::size() const {
    if (element_type_ == GgufType::STRING) return strings_.size();
    if (element_type_ == GgufType::ARRAY) return arrays_.size();
    return scalar_bytes_.size() / gguf_scalar_bytes(element_type_);
}

void GgufArray::require_index(size_t index) const {
    if (index >= size()) {
        throw InvalidArgument("array index " + std::to_string(index) + " past its " + std::to_string(size()) + " elements");
    }
}

const std::string& GgufArray::string_at(size_t index) const {
    if (element_type_ != GgufType::STRING) {
        throw InvalidArgument("an array of " + std::string(gguf_type_name(element_type_)) + " read as strings");
    }
    require_index(index);
    return strings_[index];
}

GgufValue GgufArray::at(size_t index) const {
    require_index(index);
    if (element_type_ == GgufType::STRING) return GgufValue::string(strings_[index]);
    if (element_type_ == GgufType::ARRAY) return arrays_[index];
    const uint8_t* at = scalar_bytes_.data() + index * gguf_scalar_bytes(element_type_);
    switch (element_type_) {
        case GgufType::UINT8: return GgufValue::u8(load<uint8_t>(at));
        case GgufType::INT8: return GgufValue::i8(load<int8_t>(at));
        case GgufType::UINT16: return GgufValue::u16(load<uint16_t>(at));
        case GgufType::INT16: return GgufValue::i16(load<int16_t>(at));
        case GgufType::UINT32: return GgufValue::u32(load<uint32_t>(at));
        case GgufType::INT32: return GgufValue::i32(load<int32_t>(at));
        case GgufType::FLOAT32: return GgufValue::f32(load<float>(at));
        case GgufType::BOOL: return GgufValue::boolean(load<uint8_t>(at) != 0);
        case GgufType::UINT64: return GgufValue::u64(load<uint64_t>(at));
        case GgufType::INT64: return GgufValue::i64(load<int64_t>(at));
        case GgufType::FLOAT64: return GgufValue::f64(load<double>(at));
        case GgufType::STRING: case GgufType::ARRAY: break;
    }
    throw InvalidArgument("unreachable array element type");
}


bool GgufValue::is_integer() const {
    return std::holds_alternative<uint64_t>(payload_) || std::holds_alternative<int64_t>(payload_);
}

namespace {
[[noreturn]] void wrong_type(GgufType have, std::string_view want) {
    throw InvalidArgument("GGUF value of type " + std::string(gguf_type_name(have)) + " used as " +
                          std::string(want));
}
}  // namespace

uint64_t GgufValue::as_u64() const {
    if (const auto* u = std::get_if<uint64_t>(&payload_)) return *u;
    if (const auto* i = std::get_if<int64_t>(&payload_)) {
        if (*i < 0) throw InvalidArgument("GGUF value " + std::to_string(*i) + " is negative where a count was expected");
        return static_cast<uint64_t>(*i);
    }
    wrong_type(type_, "an unsigned integer");
}

int64_t GgufValue::as_i64() const {
    if (const auto* i = std::get_if<int64_t>(&payload_)) return *i;
    if (const auto* u = std::get_if<uint64_t>(&payload_)) {
        if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            throw InvalidArgument("GGUF value " + std::to_string(*u) + " does not fit in int64");
        return static_cast<int64_t>(*u);
    }
    wrong_type(type_, "an integer");
}

double GgufValue::as_f64() const {
    if (const auto* d = std::get_if<double>(&payload_)) return *d;
    if (const auto* u = std::get_if<uint64_t>(&payload_)) return static_cast<double>(*u);
    if (const auto* i = std::get_if<int64_t>(&payload_)) return static_cast<double>(*i);
    wrong_type(type_, "a number");
}

bool GgufValue::as_bool() const {
    if (const auto* b = std::get_if<bool>(&payload_)) return *b;
    if (is_integer()) return as_i64() != 0;
    wrong_type(type_, "a bool");
}

const std::string& GgufValue::as_string() const {
    if (const auto* s = std::get_if<std::string>(&payload_)) return *s;
    wrong_type(type_, "a string");
}

const GgufArray& GgufValue::as_array() const {
    if (const auto* a = std::get_if<std::shared_ptr<const GgufArray>>(&payload_)) return **a;
    wrong_type(type_, "an array");
}

std::vector<std::string> GgufValue::as_string_vector() const {
    const auto& array = as_array();
    std::vector<std::string> out;
    out.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) out.push_back(array.string_at(i));
    return out;
}

std::vector<float> GgufValue::as_f32_vector() const {
    const auto& array = as_array();
    std::vector<float> out;
    out.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) out.push_back(static_cast<float>(array.at(i).as_f64()));
    return out;
}

std::vector<int32_t> GgufValue::as_i32_vector() const {
    const auto& array = as_array();
    std::vector<int32_t> out;
    out.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) out.push_back(static_cast<int32_t>(array.at(i).as_i64()));
    return out;
}

std::string GgufValue::to_display_string(size_t max_items) const {
    switch (type_) {
        case GgufType::STRING: {
            std::string s = as_string();
            if (s.size() > 80) s = s.substr(0, 77) + "...";
            return "\"" + s + "\"";
        }
        case GgufType::BOOL: return as_bool() ? "true" : "false";
        case GgufType::FLOAT32:
        case GgufType::FLOAT64: {
            char buf[64];
            std::snprintf(buf, sizeof buf, "%g", as_f64());
            return buf;
        }
        case GgufType::ARRAY: {
            const auto& array = as_array();
            std::string s = "[";
            for (size_t i = 0; i < array.size() && i < max_items; ++i) {
                if (i) s += ", ";
                s += array.at(i).to_display_string(max_items);
            }
            if (array.size() > max_items) s += ", ... (" + std::to_string(array.size()) + " items)";
            return s + "]";
        }
        default:
            return std::holds_alternative<int64_t>(payload_) ? std::to_string(std::get<int64_t>(payload_))
                                                             : std::to_string(std::get<uint64_t>(payload_));
    }
}

}  // namespace inferscope
