#pragma once
// Scalar replicas of the activation encoders of engine/formats (quant_legacy.cpp's
// quantize_q8_0_activations / quantize_q8_1_activations, quant_kquants_quantize.cpp's
// quantize_q8_K_ref, engine/core/fp16.h's fp32_to_fp16 / fp32_to_bf16), for the inputs the
// vector encoders hand back: blocks holding an infinity or a NaN, blocks whose multiplier
// overflows (a denormal maximum), and the odd element at the end of an F16/BF16 row.
//
// Included only by the row_dot_<isa>.cpp files, each of which compiles it for its own
// instruction set: everything is in an anonymous namespace (no symbol can leak between
// the instruction-set families) and only C headers are used. The code is written so that it
// rounds exactly as the originals whatever the compiler's contraction setting: the one
// multiply-then-add (nearest_int) has an optimisation barrier between the two operations.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/formats/block_layouts.h"

namespace inferscope::simd {
namespace {
namespace fallback {

inline uint32_t float_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, sizeof(u));
    return u;
}

// engine/core/fp16.h fp32_to_fp16: round to nearest even, NaN -> sign | 0x7E00.
inline uint16_t fp32_to_fp16(float f) {
    const uint32_t x = float_bits(f);
    const uint32_t sign = (x >> 16) & 0x8000u;
    const uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);
    if (abs < 0x38800000u) {
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
        const uint32_t exponent = abs >> 23;
        const uint32_t mantissa = (abs & 0x7FFFFFu) | 0x800000u;
        const uint32_t shift = 126 - exponent;
        uint32_t half_mantissa = mantissa >> shift;
        const uint32_t remainder = mantissa & ((1u << shift) - 1);
        const uint32_t halfway = 1u << (shift - 1);
        if (remainder > halfway || (remainder == halfway && (half_mantissa & 1u))) ++half_mantissa;
        return static_cast<uint16_t>(sign | half_mantissa);
    }
    uint32_t rounded = abs + 0xFFFu + ((abs >> 13) & 1u);
    rounded -= (112u << 23);
    return static_cast<uint16_t>(sign | (rounded >> 13));
}

// engine/core/fp16.h fp32_to_bf16: round to nearest even, NaN -> quiet NaN.
inline uint16_t fp32_to_bf16(float f) {
    uint32_t x = float_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
    x += 0x7FFFu + ((x >> 16) & 1u);
    return static_cast<uint16_t>(x >> 16);
}

// quant_blocks.h round_even_saturate_int8.
inline int8_t round_even_saturate_int8(float x) {
    if (!(x > -2147483648.f && x < 2147483648.f)) return INT8_MIN;
    const float r = std::nearbyint(x);
    if (r > 127.f) return INT8_MAX;
    if (r < -128.f) return INT8_MIN;
    return static_cast<int8_t>(r);
}

// quant_blocks.h nearest_int, applied to a*b (ggml: nearest_int(iscale*x)), with the product
// rounded to float before the bias is added (no fused multiply-add).
inline int nearest_int_of_product(float a, float b) {
    float product = a * b;
    __asm__("" : "+x"(product));  // keeps the compiler from contracting a*b + c into an fma
    const float biased = product + 12582912.f;
    return static_cast<int>(float_bits(biased) & 0x007FFFFFu) - 0x00400000;
}

// ggml's MAX(amax, |x|) scan (quant_legacy.cpp absmax).
inline float absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);
    return amax;
}

// quantize_q8_0_activations, one 32-element block (34 bytes).
inline void encode_q8_0_block(const float* x, uint8_t* dst) {
    const float amax = absmax(x, 32);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    store_u16(dst, fp32_to_fp16(amax / 127.0f));
    for (int j = 0; j < 32; ++j) {
        const int8_t q = round_even_saturate_int8(x[j] * id);
        std::memcpy(dst + 2 + j, &q, 1);
    }
}

// quantize_q8_1_activations, one 32-element block (36 bytes).
inline void encode_q8_1_block(const float* x, uint8_t* dst) {
    const float amax = absmax(x, 32);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
        const int8_t q = round_even_saturate_int8(x[j] * id);
        std::memcpy(dst + 4 + j, &q, 1);
        sum += q;
    }
    store_u16(dst, fp32_to_fp16(d));
    store_u16(dst + 2, fp32_to_fp16(d * static_cast<float>(sum)));
}

// quantize_q8_K_ref, one 256-element block (block_layouts::kQ8_K bytes: float d, 256 qs, 16 int16 bsums).
inline void encode_q8_k_block(const float* x, uint8_t* dst) {
    float amax = 0.0f, max = 0.0f;
    for (int k = 0; k < 256; ++k) {
        const float ax = std::fabs(x[k]);
        if (ax > amax) {
            amax = ax;
            max = x[k];
        }
    }
    std::memset(dst, 0, block_layouts::kQ8_K);
    if (max == 0.0f) return;
    const float iscale = -127.f / max;
    int8_t q[256];
    for (int k = 0; k < 256; ++k) {
        const int v = nearest_int_of_product(iscale, x[k]);
        q[k] = static_cast<int8_t>(v < 127 ? v : 127);
    }
    std::memcpy(dst + 4, q, 256);
    for (int j = 0; j < 16; ++j) {
        int sum = 0;
        for (int l = 0; l < 16; ++l) sum += q[16 * j + l];
        const auto s = static_cast<int16_t>(sum);
        std::memcpy(dst + 260 + 2 * j, &s, sizeof(s));
    }
    const float d = 1 / iscale;
    std::memcpy(dst, &d, sizeof(d));
}

}  // namespace fallback
}  // namespace
}  // namespace inferscope::simd
