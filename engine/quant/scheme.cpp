#include "engine/quant/scheme.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/fp16.h"

namespace inferscope {
namespace {

constexpr int kMinIntBits = 2;
constexpr int kMaxIntBits = 8;
constexpr int64_t kDefaultNf4Block = 64;
constexpr int64_t kMaxBlock = int64_t{1} << 24;

constexpr std::string_view kGrammar =
    "int<b>:tensor|row|g<N> (b = 2..8), nf4[:<block>], q8_0, q4_0, q4_k, q6_k, iq4_nl, iq4_xs; "
    "INT and NF4 accept a last field f16|bf16|f32 for the scale format";

[[noreturn]] void fail(std::string_view text, const std::string& problem) {
    throw InvalidArgument("quantization scheme \"" + std::string(text) + "\": " + problem + " (grammar: " +
                          std::string(kGrammar) + ")");
}

std::vector<std::string_view> split_fields(std::string_view text) {
    std::vector<std::string_view> fields;
    size_t start = 0;
    while (true) {
        const size_t colon = text.find(':', start);
        fields.push_back(text.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
        if (colon == std::string_view::npos) return fields;
        start = colon + 1;
    }
}

// A positive decimal integer with nothing around it; nullopt otherwise.
std::optional<int64_t> parse_positive(std::string_view digits) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || value <= 0) return std::nullopt;
    return value;
}

std::optional<ScaleFormat> parse_scale_format(std::string_view field) {
    if (field == "f16" || field == "fp16") return ScaleFormat::F16;
    if (field == "bf16") return ScaleFormat::BF16;
    if (field == "f32" || field == "fp32") return ScaleFormat::F32;
    return std::nullopt;
}

std::string_view scale_format_name(ScaleFormat format) {
    switch (format) {
        case ScaleFormat::F16: return "f16";
        case ScaleFormat::BF16: return "bf16";
        case ScaleFormat::F32: return "f32";
    }
    return "f16";
}

// Consumes a trailing scale-format field, if any.
ScaleFormat take_scale_format(std::vector<std::string_view>& fields) {
    if (fields.size() > 1) {
        if (const auto format = parse_scale_format(fields.back())) {
            fields.pop_back();
            return *format;
        }
    }
    return ScaleFormat::F16;
}

int64_t parse_block(std::string_view text, std::string_view digits, const char* what) {
    const auto value = parse_positive(digits);
    if (!value || *value < 2 || *value > kMaxBlock) {
        fail(text, std::string(what) + " \"" + std::string(digits) + "\" must be an integer from 2 to " +
                       std::to_string(kMaxBlock));
    }
    return *value;
}

QuantScheme parse_int(std::string_view text, std::vector<std::string_view> fields) {
    QuantScheme s;
    s.family = SchemeFamily::Int;
    s.scale_format = take_scale_format(fields);
    const auto bits = parse_positive(fields[0].substr(3));
    if (!bits || *bits < kMinIntBits || *bits > kMaxIntBits) {
        fail(text, "bit width \"" + std::string(fields[0].substr(3)) + "\" is out of range (2..8)");
    }
    s.bits = static_cast<int>(*bits);
    if (fields.size() != 2) fail(text, "INT schemes need a granularity: tensor, row or g<N>");
    const std::string_view granularity = fields[1];
    if (granularity == "tensor") {
        s.granularity = Granularity::Tensor;
    } else if (granularity == "row") {
        s.granularity = Granularity::Row;
    } else if (granularity.size() > 1 && granularity[0] == 'g') {
        s.granularity = Granularity::Group;
        s.block = parse_block(text, granularity.substr(1), "group size");
    } else {
        fail(text, "unknown granularity \"" + std::string(granularity) + "\"");
    }
    return s;
}

QuantScheme parse_nf4(std::string_view text, std::vector<std::string_view> fields) {
    QuantScheme s;
    s.family = SchemeFamily::Nf4;
    s.bits = 4;
    s.scale_format = take_scale_format(fields);
    s.block = kDefaultNf4Block;
    if (fields.size() > 2) fail(text, "too many fields for nf4");
    if (fields.size() == 2) s.block = parse_block(text, fields[1], "NF4 block size");
    return s;
}

}  // namespace

int scale_format_bits(ScaleFormat format) { return format == ScaleFormat::F32 ? 32 : 16; }

float stored_scale(float scale, ScaleFormat format) {
    switch (format) {
        case ScaleFormat::F16: return fp16_to_fp32(fp32_to_fp16(scale));
        case ScaleFormat::BF16: return bf16_to_fp32(fp32_to_bf16(scale));
        case ScaleFormat::F32: return scale;
    }
    return scale;
}

QuantScheme parse_quant_scheme(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    std::vector<std::string_view> fields = split_fields(lower);
    const std::string_view head = fields[0];
    if (head.starts_with("int")) return parse_int(text, std::move(fields));
    if (head == "nf4") return parse_nf4(text, std::move(fields));
    for (const GgmlType type : {GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_NL,
                                GgmlType::IQ4_XS}) {
        if (fields.size() == 1 && ggml_type_from_name(head) == type) {
            QuantScheme s;
            s.family = SchemeFamily::Gguf;
            s.gguf_type = type;
            s.bits = 0;
            return s;
        }
    }
    fail(text, "unknown scheme");
}

std::string QuantScheme::name() const {
    // Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    std::string text;
    if (family == SchemeFamily::Gguf) {
        text = std::string(ggml_type_name(gguf_type));
        std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
        return text;
    }
    if (family == SchemeFamily::Nf4) {
        text = "nf4";
        if (block != kDefaultNf4Block) text.append(":").append(std::to_string(block));
    } else {
        text.append("int").append(std::to_string(bits)).append(":");
        if (granularity == Granularity::Tensor) text.append("tensor");
        if (granularity == Granularity::Row) text.append("row");
        if (granularity == Granularity::Group) text.append("g").append(std::to_string(block));
    }
    if (scale_format != ScaleFormat::F16) text.append(":").append(scale_format_name(scale_format));
    return text;
}

void QuantScheme::check_shape(int64_t rows, int64_t cols, const std::string& matrix) const {
    const std::string shape = std::to_string(rows) + " x " + std::to_string(cols);
    if (rows <= 0 || cols <= 0) throw InvalidArgument(name() + ": matrix \"" + matrix + "\" is empty (" + shape + ")");
    if (family == SchemeFamily::Gguf) {
        const uint32_t block_elements = ggml_type_traits(gguf_type).block_elements;
        if (cols % block_elements != 0) {
            throw UnsupportedError(name() + " needs rows that are a multiple of " + std::to_string(block_elements) +
                                   " weights, but \"" + matrix + "\" (" + shape + ") has rows of " +
                                   std::to_string(cols) + "; choose a scheme whose block divides " +
                                   std::to_string(cols));
        }
        return;
    }
    const bool blocked = family == SchemeFamily::Nf4 || granularity == Granularity::Group;
    if (blocked && cols % block != 0) {
        throw InvalidArgument(name() + ": " + (family == SchemeFamily::Nf4 ? "block" : "group") + " size " +
                              std::to_string(block) + " does not divide the rows of \"" + matrix + "\" (" + shape +
                              ", rows of " + std::to_string(cols) + " weights)");
    }
}

int64_t QuantScheme::scale_count(int64_t rows, int64_t cols) const {
    if (family == SchemeFamily::Gguf) return 0;
    if (family == SchemeFamily::Int && granularity == Granularity::Tensor) return 1;
    if (family == SchemeFamily::Int && granularity == Granularity::Row) return rows;
    return rows * (cols / block);
}

double QuantScheme::bits_per_weight(int64_t rows, int64_t cols) const {
    const double elements = static_cast<double>(rows) * static_cast<double>(cols);
    if (family == SchemeFamily::Gguf) {
        return static_cast<double>(ggml_row_bytes(gguf_type, static_cast<uint64_t>(cols))) * 8.0 /
               static_cast<double>(cols);
    }
    return bits + static_cast<double>(scale_format_bits(scale_format)) *
                      static_cast<double>(scale_count(rows, cols)) / elements;
}

uint64_t QuantScheme::storage_bytes(int64_t rows, int64_t cols) const {
    if (family == SchemeFamily::Gguf) {
        return ggml_row_bytes(gguf_type, static_cast<uint64_t>(cols)) * static_cast<uint64_t>(rows);
    }
    const uint64_t code_bits = static_cast<uint64_t>(rows) * static_cast<uint64_t>(cols) * static_cast<uint64_t>(bits);
    const uint64_t scale_bytes = static_cast<uint64_t>(scale_format_bits(scale_format) / 8);
    return (code_bits + 7) / 8 + static_cast<uint64_t>(scale_count(rows, cols)) * scale_bytes;
}

}  // namespace inferscope
