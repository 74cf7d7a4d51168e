#include "engine/backend/activation_precision.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "engine/core/error.h"

namespace inferscope {
namespace {

[[noreturn]] void fail(std::string_view text, const std::string& problem) {
    throw InvalidArgument("activation precision '" + std::string(text) + "': " + problem +
                          " (expected f32, int8:tensor, int8:token, llm.int8 or llm.int8:<threshold>)");
}

float parse_threshold(std::string_view text, std::string_view field) {
    float value = 0.0f;
    const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    if (error != std::errc() || end != field.data() + field.size()) fail(text, "threshold is not a number");
    if (!std::isfinite(value) || value <= 0.0f) fail(text, "threshold must be a finite number above 0");
    return value;
}

}  // namespace

ActivationPrecision parse_activation_precision(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    ActivationPrecision p;
    if (lower == "f32") return p;
    if (lower == "int8:tensor") {
        p.mode = ActivationMode::Int8Tensor;
        return p;
    }
    if (lower == "int8:token") {
        p.mode = ActivationMode::Int8Token;
        return p;
    }
    constexpr std::string_view kLlmInt8 = "llm.int8";
    if (std::string_view(lower).starts_with(kLlmInt8)) {
        const std::string_view rest = std::string_view(lower).substr(kLlmInt8.size());
        p.mode = ActivationMode::LlmInt8;
        if (rest.empty()) return p;
        if (rest.front() != ':') fail(text, "unknown mode");
        p.outlier_threshold = parse_threshold(text, rest.substr(1));
        return p;
    }
    fail(text, "unknown mode");
}

std::string activation_precision_name(const ActivationPrecision& precision) {
    switch (precision.mode) {
        case ActivationMode::F32: return "f32";
        case ActivationMode::Int8Tensor: return "int8:tensor";
        case ActivationMode::Int8Token: return "int8:token";
        case ActivationMode::LlmInt8: {
            // Shortest text that reads back as the same float: "llm.int8:6", "llm.int8:2.5".
            char number[32];
            const auto [end, error] = std::to_chars(number, number + sizeof number, precision.outlier_threshold);
            return "llm.int8:" + std::string(number, error == std::errc() ? end : number);
        }
    }
    return "?";
}

}  // namespace inferscope
