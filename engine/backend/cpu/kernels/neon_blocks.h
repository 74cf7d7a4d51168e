#pragma once
// Block loads and integer dot products shared by the ARM64 row kernels (*_neon.cpp,
// *_dotprod.cpp). Everything is in an anonymous namespace: each kernel file compiles its own
// copy with its own flags, so no copy built for one extension can run where only a lower
// one exists.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "engine/formats/block_layouts.h"

namespace inferscope::simd {
namespace {

namespace layouts = inferscope::block_layouts;

// A block's fp16 scale (its first two bytes), widened exactly.
inline float block_scale(const uint8_t* block) {
    __fp16 half;
    std::memcpy(&half, block, sizeof(half));
    return static_cast<float>(half);
}

// The 32 weights of a Q4_0 block as signed values: low nibbles are elements 0..15, high
// nibbles 16..31, each offset by 8.
inline int8x16x2_t unpack_q4_0(const uint8_t* block) {
    const uint8x16_t packed = vld1q_u8(block + 2);
    const int8x16_t offset = vdupq_n_s8(8);
    return {{vsubq_s8(vreinterpretq_s8_u8(vandq_u8(packed, vdupq_n_u8(0x0F))), offset),
             vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(packed, 4)), offset)}};
}

inline int8x16x2_t load_q8_0(const uint8_t* block) {
    const auto* qs = reinterpret_cast<const int8_t*>(block + 2);
    return {{vld1q_s8(qs), vld1q_s8(qs + 16)}};
}

// Widening multiply-accumulate of 32 signed bytes, the plain-NEON integer dot product: each
// product is exact in 16 bits and pairs are added into 32-bit lanes.
inline int32_t dot_32_widening(const int8x16x2_t& a, const int8x16x2_t& b) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int half = 0; half < 2; ++half) {
        acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a.val[half]), vget_low_s8(b.val[half])));
        acc = vpadalq_s16(acc, vmull_high_s8(a.val[half], b.val[half]));
    }
    return vaddvq_s32(acc);
}

// Q8_0 and Q4_0 rows (activations in Q8_0) through a 32-value integer dot `Dot32`; each
// block's sum is scaled as the reference scales it: Q8_0 sumi x (dw x dx), Q4_0 (sumi x dw) x dx.
template <int32_t (*Dot32)(const int8x16x2_t&, const int8x16x2_t&)>
float q8_0_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ8_0, x += layouts::kQ8_0) {
        sum += static_cast<float>(Dot32(load_q8_0(w), load_q8_0(x))) * (block_scale(w) * block_scale(x));
    }
    return sum;
}

template <int32_t (*Dot32)(const int8x16x2_t&, const int8x16x2_t&)>
float q4_0_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ4_0, x += layouts::kQ8_0) {
        sum += static_cast<float>(Dot32(unpack_q4_0(w), load_q8_0(x))) * block_scale(w) * block_scale(x);
    }
    return sum;
}

// The row kernels' multi-row form: one row at a time through `dot`.
template <float (*Dot)(int64_t, const uint8_t*, const uint8_t*)>
void rows_of(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows, const uint8_t* activation_row,
             float* out) {
    for (int64_t r = 0; r < n_rows; ++r) out[r] = Dot(n, weights + static_cast<uint64_t>(r) * weight_row_bytes, activation_row);
}

}  // namespace
}  // namespace inferscope::simd
