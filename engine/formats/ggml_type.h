#pragma once
// The tensor element types of the GGUF/ggml format: ids as stored in files, block sizes,
// and which of them the engine can compute with.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace inferscope {

enum class GgmlType : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
    Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
    IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21, IQ2_S = 22,
    IQ4_XS = 23, I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, IQ1_M = 29, BF16 = 30,
    TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

struct GgmlTypeTraits {
    GgmlType type;
    std::string_view name;
    uint32_t block_elements;  // elements per block (1 for plain scalar types)
    uint32_t block_bytes;     // bytes per block
    bool weight_supported;    // the engine can dequantize it and multiply with it
};

// Traits of a type id read from a file; nullopt for ids that no ggml version defines.
std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type_id);
const GgmlTypeTraits& ggml_type_traits(GgmlType type);

std::string_view ggml_type_name(GgmlType type);
std::optional<GgmlType> ggml_type_from_name(std::string_view name);  // "Q4_K", "f16", ...

// Comma-separated names of the types the engine computes with, for error messages.
std::string supported_weight_type_names();

// llama.cpp's general.file_type (llama_ftype) for a file whose 2-D weights are all of type
// `weights`: the K-quants map to their "_S" mixes. nullopt where llama.cpp has no such value.
std::optional<uint32_t> llama_file_type(GgmlType weights);

// Bytes of a row of `elements` values; the caller guarantees elements % block_elements == 0.
uint64_t ggml_row_bytes(GgmlType type, uint64_t elements);

}  // namespace inferscope
