#pragma once
// Weight formats: dequantization of every supported ggml type, quantization from F32
// (for writing models), and the dot products used by the matmul kernels.
//
// Dot products follow llama.cpp's CPU semantics so that results (and greedy tokens) match
// it: the activation row is first converted to the weight type's companion "dot type"
// (Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants and IQ4_XS, F16
// for F16, BF16 for BF16, F32 for F32) and the dot product is then taken between the two encoded rows.
#include <cstdint>

#include "engine/formats/ggml_type.h"

namespace inferscope {

// Converts `n` elements (a multiple of the type's block size) of a row to floats.
// Throws UnsupportedError for types the engine does not implement.
void dequantize_row(GgmlType type, const uint8_t* src, float* dst, int64_t n);

// Encodes `n` floats as `type` (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K,
// Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS), writing ggml_row_bytes(type, n) bytes. Deterministic.
void quantize_row(GgmlType type, const float* src, uint8_t* dst, int64_t n);

// The encoding an activation row gets before a dot product with a row of `weight_type`.
GgmlType vec_dot_type(GgmlType weight_type);

// Dot product of a weight row (encoded as `weight_type`) with an activation row already
// encoded as vec_dot_type(weight_type), both of `n` elements.
float vec_dot(GgmlType weight_type, int64_t n, const uint8_t* weight_row, const uint8_t* activation_row);

}  // namespace inferscope
