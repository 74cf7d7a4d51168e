#include "engine/gguf/gguf_value.h"

#include <cmath>
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
    GgufArray array{GgufType::STRING, {}};
    array.items.reserve(values.size());
    for (const auto& v : values) array.items.push_back(GgufValue::string(v));
    return GgufValue::array(std::move(array));
}

GgufValue GgufValue::f32_array(const std::vector<float>& values) {
    GgufArray array{GgufType::FLOAT32, {}};
    array.items.reserve(values.size());
    for (float v : values) array.items.push_back(GgufValue::f32(v));
    return GgufValue::array(std::move(array));
}

GgufValue GgufValue::i32_array(const std::vector<int32_t>& values) {
    GgufArray array{GgufType::INT32, {}};
    array.items.reserve(values.size());
    for (int32_t v : values) array.items.push_back(GgufValue::i32(v));
    return GgufValue::array(std::move(array));
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
    if (const auto* a = std::get_if<GgufArray>(&payload_)) return *a;
    wrong_type(type_, "an array");
}

std::vector<std::string> GgufValue::as_string_vector() const {
    const auto& array = as_array();
    std::vector<std::string> out;
    out.reserve(array.items.size());
    for (const auto& item : array.items) out.push_back(item.as_string());
    return out;
}

std::vector<float> GgufValue::as_f32_vector() const {
    const auto& array = as_array();
    std::vector<float> out;
    out.reserve(array.items.size());
    for (const auto& item : array.items) out.push_back(static_cast<float>(item.as_f64()));
    return out;
}

std::vector<int32_t> GgufValue::as_i32_vector() const {
    const auto& array = as_array();
    std::vector<int32_t> out;
    out.reserve(array.items.size());
    for (const auto& item : array.items) out.push_back(static_cast<int32_t>(item.as_i64()));
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
            for (size_t i = 0; i < array.items.size() && i < max_items; ++i) {
                if (i) s += ", ";
                s += array.items[i].to_display_string(max_items);
            }
            if (array.items.size() > max_items) s += ", ... (" + std::to_string(array.items.size()) + " items)";
            return s + "]";
        }
        default:
            return std::holds_alternative<int64_t>(payload_) ? std::to_string(std::get<int64_t>(payload_))
                                                             : std::to_string(std::get<uint64_t>(payload_));
    }
}

}  // namespace inferscope
