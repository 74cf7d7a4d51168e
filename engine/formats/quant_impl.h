#pragma once
// Internal to engine/formats: the per-format kernels behind quant.h. Every function works on
// whole blocks; `blocks` is the number of blocks in the row (elements / block size).
#include <cstdint>

namespace inferscope::quant_detail {

// ---- legacy 32-element formats (quant_legacy.cpp)
void dequantize_q4_0(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q8_0(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q8_1(const uint8_t* src, float* dst, int64_t blocks);

// ggml's quantize_row_*_ref (what llama-quantize writes without an imatrix).
void quantize_q4_0_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q4_1_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q5_0_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q5_1_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q8_0_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q8_1_ref(const float* src, uint8_t* dst, int64_t blocks);

// ggml-cpu's x86 (AVX/AVX2) activation quantizers quantize_row_q8_0 / quantize_row_q8_1.
void quantize_q8_0_activations(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q8_1_activations(const float* src, uint8_t* dst, int64_t blocks);

float vec_dot_q4_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q4_1_q8_1(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q5_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q5_1_q8_1(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q8_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x);

// ---- K-quants, 256-element super-blocks (quant_kquants.cpp, quant_kquants_quantize.cpp)
void dequantize_q2_K(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q3_K(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q4_K(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q5_K(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q6_K(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_q8_K(const uint8_t* src, float* dst, int64_t blocks);

void quantize_q2_K_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q3_K_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q4_K_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q5_K_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q6_K_ref(const float* src, uint8_t* dst, int64_t blocks);
void quantize_q8_K_ref(const float* src, uint8_t* dst, int64_t blocks);

float vec_dot_q2_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q3_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q4_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q5_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_q6_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);

// ---- 4-bit non-linear formats (quant_iq4.cpp): IQ4_NL blocks of 32, IQ4_XS super-blocks of 256
void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t blocks);
void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t blocks);

// ggml's quantize_iq4_nl / quantize_iq4_xs without an importance matrix (llama-quantize's path).
void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t blocks);
void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t blocks);

float vec_dot_iq4_nl_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x);
float vec_dot_iq4_xs_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x);

}  // namespace inferscope::quant_detail
