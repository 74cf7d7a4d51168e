#include "engine/formats/ggml_type.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>

#include "engine/formats/block_layouts.h"

namespace inferscope {
namespace {

namespace bl = block_layouts;

constexpr std::array kTraits = {
    GgmlTypeTraits{GgmlType::F32, "F32", 1, 4, true},
    GgmlTypeTraits{GgmlType::F16, "F16", 1, 2, true},
    GgmlTypeTraits{GgmlType::Q4_0, "Q4_0", bl::kLegacyElements, bl::kQ4_0, true},
    GgmlTypeTraits{GgmlType::Q4_1, "Q4_1", bl::kLegacyElements, bl::kQ4_1, true},
    GgmlTypeTraits{GgmlType::Q5_0, "Q5_0", bl::kLegacyElements, bl::kQ5_0, true},
    GgmlTypeTraits{GgmlType::Q5_1, "Q5_1", bl::kLegacyElements, bl::kQ5_1, true},
    GgmlTypeTraits{GgmlType::Q8_0, "Q8_0", bl::kLegacyElements, bl::kQ8_0, true},
    GgmlTypeTraits{GgmlType::Q8_1, "Q8_1", bl::kLegacyElements, bl::kQ8_1, false},
    GgmlTypeTraits{GgmlType::Q2_K, "Q2_K", bl::kSuperElements, bl::kQ2_K, true},
    GgmlTypeTraits{GgmlType::Q3_K, "Q3_K", bl::kSuperElements, bl::kQ3_K, true},
    GgmlTypeTraits{GgmlType::Q4_K, "Q4_K", bl::kSuperElements, bl::kQ4_K, true},
    GgmlTypeTraits{GgmlType::Q5_K, "Q5_K", bl::kSuperElements, bl::kQ5_K, true},
    GgmlTypeTraits{GgmlType::Q6_K, "Q6_K", bl::kSuperElements, bl::kQ6_K, true},
    GgmlTypeTraits{GgmlType::Q8_K, "Q8_K", bl::kSuperElements, bl::kQ8_K, false},
    GgmlTypeTraits{GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66, false},
    GgmlTypeTraits{GgmlType::IQ2_XS, "IQ2_XS", 256, 74, false},
    GgmlTypeTraits{GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98, false},
    GgmlTypeTraits{GgmlType::IQ1_S, "IQ1_S", 256, 50, false},
    GgmlTypeTraits{GgmlType::IQ4_NL, "IQ4_NL", bl::kLegacyElements, bl::kIQ4_NL, true},
    GgmlTypeTraits{GgmlType::IQ3_S, "IQ3_S", 256, 110, false},
    GgmlTypeTraits{GgmlType::IQ2_S, "IQ2_S", 256, 82, false},
    GgmlTypeTraits{GgmlType::IQ4_XS, "IQ4_XS", bl::kSuperElements, bl::kIQ4_XS, true},
    GgmlTypeTraits{GgmlType::I8, "I8", 1, 1, false},
    GgmlTypeTraits{GgmlType::I16, "I16", 1, 2, false},
    GgmlTypeTraits{GgmlType::I32, "I32", 1, 4, false},
    GgmlTypeTraits{GgmlType::I64, "I64", 1, 8, false},
    GgmlTypeTraits{GgmlType::F64, "F64", 1, 8, false},
    GgmlTypeTraits{GgmlType::IQ1_M, "IQ1_M", 256, 56, false},
    GgmlTypeTraits{GgmlType::BF16, "BF16", 1, 2, true},
    GgmlTypeTraits{GgmlType::TQ1_0, "TQ1_0", 256, 54, false},
    GgmlTypeTraits{GgmlType::TQ2_0, "TQ2_0", 256, 66, false},
    GgmlTypeTraits{GgmlType::MXFP4, "MXFP4", 32, 17, false},
};

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id) {
    for (const auto& traits : kTraits) {
        if (static_cast<uint32_t>(traits.type) == type_id) return traits;
    }
    return std::nullopt;
}

const GgmlTypeTraits& ggml_type_traits(GgmlType type) {
    for (const auto& traits : kTraits) {
        if (traits.type == type) return traits;
    }
    throw std::logic_error("ggml_type_traits: type outside the table");
}

std::string_view ggml_type_name(GgmlType type) { return ggml_type_traits(type).name; }

std::optional<GgmlType> ggml_type_from_name(std::string_view name) {
    std::string upper(name);
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    for (const auto& traits : kTraits) {
        if (traits.name == upper) return traits.type;
    }
    return std::nullopt;
}

std::string supported_weight_type_names() {
    std::string names;
    for (const auto& traits : kTraits) {
        if (!traits.weight_supported) continue;
        if (!names.empty()) names += ", ";
        names += traits.name;
    }
    return names;
}

std::optional<uint32_t> llama_file_type(GgmlType weights) {
    switch (weights) {
        case GgmlType::F32: return 0;
        case GgmlType::F16: return 1;
        case GgmlType::Q4_0: return 2;
        case GgmlType::Q4_1: return 3;
        case GgmlType::Q8_0: return 7;
        case GgmlType::Q5_0: return 8;
        case GgmlType::Q5_1: return 9;
        case GgmlType::Q2_K: return 10;
        case GgmlType::Q3_K: return 11;
        case GgmlType::Q4_K: return 14;
        case GgmlType::Q5_K: return 16;
        case GgmlType::Q6_K: return 18;
        case GgmlType::IQ4_NL: return 25;
        case GgmlType::IQ4_XS: return 30;
        case GgmlType::BF16: return 32;
        default: return std::nullopt;
    }
}

uint64_t ggml_row_bytes(GgmlType type, uint64_t elements) {
    const auto& traits = ggml_type_traits(type);
    return elements / traits.block_elements * traits.block_bytes;
}

}  // namespace inferscope
