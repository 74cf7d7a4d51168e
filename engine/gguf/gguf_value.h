#pragma once
// A GGUF metadata value: one of the format's scalar types, a string, or an array
// (arrays may nest). The exact stored type is kept so files round-trip through the writer.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace inferscope {

enum class GgufType : uint32_t {
    UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6,
    BOOL = 7, STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};

std::string_view gguf_type_name(GgufType type);
bool gguf_type_is_valid(uint32_t type_id);

class GgufValue;

// Bytes one stored element of a scalar type takes (0 for STRING and ARRAY).
size_t gguf_scalar_bytes(GgufType type);

// The elements of one GGUF array, held as compactly as the file holds them: scalars as their
// stored little-endian bytes (a million-entry uint8 array is a megabyte, not 48), strings as
// strings, nested arrays as values.
class GgufArray {
public:
    GgufArray() = default;
    // From values that all have element_type; InvalidArgument otherwise.
    GgufArray(GgufType element_type, const std::vector<GgufValue>& items);
    static GgufArray of_scalar_bytes(GgufType element_type, std::vector<uint8_t> bytes);
    static GgufArray of_strings(std::vector<std::string> strings);
    static GgufArray of_arrays(std::vector<GgufValue> arrays);

    GgufType element_type() const { return element_type_; }
    size_t size() const;
    bool empty() const { return size() == 0; }
    GgufValue at(size_t index) const;
    // Element `index` of a STRING array without a copy; InvalidArgument for another type.
    const std::string& string_at(size_t index) const;

private:
    void require_index(size_t index) const;  // InvalidArgument past the end

    GgufType element_type_ = GgufType::UINT8;
    std::vector<uint8_t> scalar_bytes_;
    std::vector<std::string> strings_;
    std::vector<GgufValue> arrays_;
};

class GgufValue {
public:
    GgufValue() = default;
    static GgufValue u8(uint8_t v) { return {GgufType::UINT8, uint64_t{v}}; }
    static GgufValue i8(int8_t v) { return {GgufType::INT8, int64_t{v}}; }
    static GgufValue u16(uint16_t v) { return {GgufType::UINT16, uint64_t{v}}; }
    static GgufValue i16(int16_t v) { return {GgufType::INT16, int64_t{v}}; }
    static GgufValue u32(uint32_t v) { return {GgufType::UINT32, uint64_t{v}}; }
    static GgufValue i32(int32_t v) { return {GgufType::INT32, int64_t{v}}; }
    static GgufValue u64(uint64_t v) { return {GgufType::UINT64, v}; }
    static GgufValue i64(int64_t v) { return {GgufType::INT64, v}; }
    static GgufValue f32(float v) { return {GgufType::FLOAT32, double{v}}; }
    static GgufValue f64(double v) { return {GgufType::FLOAT64, v}; }
    static GgufValue boolean(bool v) { return {GgufType::BOOL, v}; }
    static GgufValue string(std::string v) { return {GgufType::STRING, std::move(v)}; }
    static GgufValue array(GgufArray v) { return {GgufType::ARRAY, std::make_shared<const GgufArray>(std::move(v))}; }
    static GgufValue string_array(const std::vector<std::string>& values);
    static GgufValue f32_array(const std::vector<float>& values);
    static GgufValue i32_array(const std::vector<int32_t>& values);

    GgufType type() const { return type_; }
    bool is_integer() const;
    bool is_number() const { return is_integer() || type_ == GgufType::FLOAT32 || type_ == GgufType::FLOAT64; }

    // Conversions; each throws InvalidArgument naming both types when the value is not
    // of a compatible kind (an integer read as a string, a negative value as unsigned, ...).
    uint64_t as_u64() const;
    int64_t as_i64() const;
    double as_f64() const;
    bool as_bool() const;
    const std::string& as_string() const;
    const GgufArray& as_array() const;

    std::vector<std::string> as_string_vector() const;
    std::vector<float> as_f32_vector() const;
    std::vector<int32_t> as_i32_vector() const;

    // A short human-readable rendering (long arrays are abbreviated).
    std::string to_display_string(size_t max_items = 8) const;

private:
    // An array is held by pointer so that a scalar pair stays small; arrays are immutable
    // once read, so copies share it.
    using Payload = std::variant<uint64_t, int64_t, double, bool, std::string, std::shared_ptr<const GgufArray>>;
    GgufValue(GgufType type, Payload payload) : type_(type), payload_(std::move(payload)) {}

    GgufType type_ = GgufType::UINT8;
    Payload payload_ = uint64_t{0};
};

}  // namespace inferscope
