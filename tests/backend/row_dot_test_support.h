#pragma once
// What the row-dot tests and the row-dot benchmark share: the weight types the kernels
// cover, names for messages, row sizes and the reference encoding of activations.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"

namespace inferscope::testing {

inline constexpr GgmlType kRowDotWeightTypes[] = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                                                  GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K,
                                                  GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K,
                                                  GgmlType::IQ4_NL, GgmlType::IQ4_XS};

inline std::string name_of(GgmlType t) { return std::string(ggml_type_name(t)); }
inline std::string name_of(CpuIsa isa) { return std::string(cpu_isa_name(isa)); }

inline bool is_float_type(GgmlType t) { return t == GgmlType::F16 || t == GgmlType::BF16; }
inline int64_t block_elements(GgmlType t) { return ggml_type_traits(t).block_elements; }
inline size_t row_bytes(GgmlType t, int64_t n) { return ggml_row_bytes(t, static_cast<uint64_t>(n)); }

// `x` encoded as the activation row a kernel of `type`'s vec-dot type reads.
inline std::vector<uint8_t> encode_reference(GgmlType type, const std::vector<float>& x) {
    std::vector<uint8_t> out(row_bytes(type, static_cast<int64_t>(x.size())));
    quantize_row(type, x.data(), out.data(), static_cast<int64_t>(x.size()));
    return out;
}

}  // namespace inferscope::testing
