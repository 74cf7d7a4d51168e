#pragma once
// Block loads, unpacking and row loops of the 32-element formats, shared by the ARM64 row
// kernels (*_neon.cpp, *_dotprod.cpp, *_i8mm.cpp) and written over the extension's 16-value
// integer multiply-accumulate. Everything is in an anonymous namespace: each kernel file compiles
// its own copy with its own flags, so no copy built for one extension can run where only a
// lower one exists.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

namespace inferscope::simd {
namespace {

namespace layouts = inferscope::block_layouts;

// acc plus the sixteen products a[i] * b[i], four per 32-bit lane (which four is the
// extension's choice: only lane totals are used).
using Accumulate16 = int32x4_t (*)(int32x4_t acc, int8x16_t a, int8x16_t b);

// The plain-NEON form: each product is exact in 16 bits and pairs are added into the lanes.
inline int32x4_t accumulate_16_widening(int32x4_t acc, int8x16_t a, int8x16_t b) {
    acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(a), vget_low_s8(b)));
    return vpadalq_s16(acc, vmull_high_s8(a, b));
}

// The exact sum of the 32 products of two blocks' values.
template <Accumulate16 Acc16>
inline int32_t dot_32(const int8x16x2_t& a, const int8x16x2_t& b) {
    return vaddvq_s32(Acc16(Acc16(vdupq_n_s32(0), a.val[0], b.val[0]), a.val[1], b.val[1]));
}

// The fp16 number at p (a block's scale, min or sum), widened exactly.
inline float half_at(const uint8_t* p) {
    __fp16 half;
    std::memcpy(&half, p, sizeof(half));
    return static_cast<float>(half);
}

// The 32 nibbles of the 16 bytes at qs in element order: low nibbles are elements 0..15,
// high nibbles 16..31.
inline uint8x16x2_t block_nibbles(const uint8_t* qs) {
    const uint8x16_t packed = vld1q_u8(qs);
    return {{vandq_u8(packed, vdupq_n_u8(0x0F)), vshrq_n_u8(packed, 4)}};
}

inline int8x16x2_t as_signed(const uint8x16x2_t& v) { return {{vreinterpretq_s8_u8(v.val[0]), vreinterpretq_s8_u8(v.val[1])}}; }

inline int8x16x2_t minus(const uint8x16x2_t& v, int8_t offset) {
    const int8x16_t o = vdupq_n_s8(offset);
    return {{vsubq_s8(vreinterpretq_s8_u8(v.val[0]), o), vsubq_s8(vreinterpretq_s8_u8(v.val[1]), o)}};
}

// Bit j of the little-endian 32 bits at qh as 0 or 16, for j = 0..31: the fifth bits of a
// Q5 block's elements.
inline uint8x16x2_t q5_fifth_bits(const uint8_t* qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof(bits));
    const uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(bits));
    static constexpr uint8_t kLowBytes[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
    static constexpr uint8_t kBitOfByte[16] = {1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128};
    const uint8x16_t low_bytes = vld1q_u8(kLowBytes), bit = vld1q_u8(kBitOfByte), sixteen = vdupq_n_u8(16);
    const uint8x16_t low = vqtbl1q_u8(bytes, low_bytes);                          // bytes 0, 1 spread
    const uint8x16_t high = vqtbl1q_u8(bytes, vaddq_u8(low_bytes, vdupq_n_u8(2)));  // bytes 2, 3 spread
    return {{vandq_u8(vtstq_u8(low, bit), sixteen), vandq_u8(vtstq_u8(high, bit), sixteen)}};
}

inline uint8x16x2_t q5_values(const uint8_t* qh, const uint8_t* qs) {
    const uint8x16x2_t low = block_nibbles(qs), fifth = q5_fifth_bits(qh);
    return {{vorrq_u8(low.val[0], fifth.val[0]), vorrq_u8(low.val[1], fifth.val[1])}};
}

// The 32 elements whose nibbles are the 16 bytes at qs, as IQ4 levels.
inline int8x16x2_t iq4_values(const uint8_t* qs) {
    const int8x16_t levels = vld1q_s8(kIQ4NLValues);
    const uint8x16x2_t nibbles = block_nibbles(qs);
    return {{vqtbl1q_s8(levels, nibbles.val[0]), vqtbl1q_s8(levels, nibbles.val[1])}};
}

// Each weight block's 32 values as signed bytes (offsets applied where the format has them).
inline int8x16x2_t unpack_q4_0(const uint8_t* block) { return minus(block_nibbles(block + 2), 8); }
inline int8x16x2_t unpack_q4_1(const uint8_t* block) { return as_signed(block_nibbles(block + 4)); }
inline int8x16x2_t unpack_q5_0(const uint8_t* block) { return minus(q5_values(block + 2, block + 6), 16); }
inline int8x16x2_t unpack_q5_1(const uint8_t* block) { return as_signed(q5_values(block + 4, block + 8)); }
inline int8x16x2_t unpack_iq4_nl(const uint8_t* block) { return iq4_values(block + 2); }

inline int8x16x2_t load_q8_0(const uint8_t* block) {
    const auto* qs = reinterpret_cast<const int8_t*>(block + 2);
    return {{vld1q_s8(qs), vld1q_s8(qs + 16)}};
}
inline int8x16x2_t load_q8_1(const uint8_t* block) {
    const auto* qs = reinterpret_cast<const int8_t*>(block + 4);
    return {{vld1q_s8(qs), vld1q_s8(qs + 16)}};
}

using UnpackBlock = int8x16x2_t (*)(const uint8_t* block);

// Rows whose blocks sum to sumi x (dw x dx) against Q8_0 (Q8_0, Q5_0, IQ4_NL weights).
template <int64_t BlockBytes, UnpackBlock Unpack, Accumulate16 Acc16>
float symmetric_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += BlockBytes, x += layouts::kQ8_0) {
        sum += static_cast<float>(dot_32<Acc16>(Unpack(w), load_q8_0(x))) * (half_at(w) * half_at(x));
    }
    return sum;
}

// Q4_0 against Q8_0: the reference scales each block as (sumi x dw) x dx.
template <Accumulate16 Acc16>
float q4_0_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ4_0, x += layouts::kQ8_0) {
        sum += static_cast<float>(dot_32<Acc16>(unpack_q4_0(w), load_q8_0(x))) * half_at(w) * half_at(x);
    }
    return sum;
}

// Rows with a per-block min against Q8_1 (Q4_1, Q5_1): (dw x dx) x sumi + mw x sx, where
// the activation block's sx = dx x sum(qx) stands for the min's products.
template <int64_t BlockBytes, UnpackBlock Unpack, Accumulate16 Acc16>
float offset_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += BlockBytes, x += layouts::kQ8_1) {
        const float sumi = static_cast<float>(dot_32<Acc16>(Unpack(w), load_q8_1(x)));
        sum += (half_at(w) * half_at(x)) * sumi + half_at(w + 2) * half_at(x + 2);
    }
    return sum;
}

template <Accumulate16 Acc16>
inline float q8_0_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    return symmetric_row_dot<layouts::kQ8_0, &load_q8_0, Acc16>(n, w, x);
}

// The row kernels' multi-row form: one row at a time through `dot`.
template <float (*Dot)(int64_t, const uint8_t*, const uint8_t*)>
void rows_of(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows, const uint8_t* activation_row,
             float* out) {
    for (int64_t r = 0; r < n_rows; ++r) out[r] = Dot(n, weights + static_cast<uint64_t>(r) * weight_row_bytes, activation_row);
}

}  // namespace
}  // namespace inferscope::simd
