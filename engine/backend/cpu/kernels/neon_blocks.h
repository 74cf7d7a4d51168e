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

// How each 32-element format scales a block's exact integer sum `sumi` of weight block w
// against activation block x, in the reference's order.
// Q8_0, Q5_0, IQ4_NL against Q8_0: sumi x (dw x dx).
struct SymmetricScale {
    static float of(const uint8_t* w, const uint8_t* x, int32_t sumi) { return static_cast<float>(sumi) * (half_at(w) * half_at(x)); }
};
// Q4_0 against Q8_0: (sumi x dw) x dx.
struct Q4_0Scale {
    static float of(const uint8_t* w, const uint8_t* x, int32_t sumi) { return static_cast<float>(sumi) * half_at(w) * half_at(x); }
};
// Q4_1, Q5_1 against Q8_1: (dw x dx) x sumi + mw x sx, where the activation block's
// sx = dx x sum(qx) stands for the min's products.
struct OffsetScale {
    static float of(const uint8_t* w, const uint8_t* x, int32_t sumi) {
        return (half_at(w) * half_at(x)) * static_cast<float>(sumi) + half_at(w + 2) * half_at(x + 2);
    }
};

// Rows of 32-element blocks (BlockBytes each, values by Unpack) against activation blocks of
// XBytes (quants by LoadX): B activation rows (row i at x + i * x_stride) against one weight
// row, each weight block unpacked once; every activation row's float steps are those of B = 1.
template <int64_t BlockBytes, UnpackBlock Unpack, int64_t XBytes, UnpackBlock LoadX, class Scale, Accumulate16 Acc16>
struct LegacyRows {
    static constexpr int64_t kBlockBytes = BlockBytes;
    static constexpr int64_t kXBytes = XBytes;
    static int8x16x2_t unpack(const uint8_t* block) { return Unpack(block); }
    static int8x16x2_t load_x(const uint8_t* block) { return LoadX(block); }
    using BlockScale = Scale;

    template <int B>
    static void rows(int64_t n, const uint8_t* w, const uint8_t* x, uint64_t x_stride, float* out, int64_t out_stride) {
        float sum[B] = {};
        for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += BlockBytes, x += XBytes) {
            const int8x16x2_t values = Unpack(w);
            for (int i = 0; i < B; ++i) {
                const uint8_t* xb = x + static_cast<uint64_t>(i) * x_stride;
                sum[i] += Scale::of(w, xb, dot_32<Acc16>(values, LoadX(xb)));
            }
        }
        for (int i = 0; i < B; ++i) out[i * out_stride] = sum[i];
    }
};

template <int64_t BlockBytes, UnpackBlock Unpack, Accumulate16 Acc16>
using SymmetricRows = LegacyRows<BlockBytes, Unpack, layouts::kQ8_0, &load_q8_0, SymmetricScale, Acc16>;
template <int64_t BlockBytes, UnpackBlock Unpack, Accumulate16 Acc16>
using OffsetRows = LegacyRows<BlockBytes, Unpack, layouts::kQ8_1, &load_q8_1, OffsetScale, Acc16>;
template <Accumulate16 Acc16>
using Q8_0Rows = SymmetricRows<layouts::kQ8_0, &load_q8_0, Acc16>;
template <Accumulate16 Acc16>
using Q4_0Rows = LegacyRows<layouts::kQ4_0, &unpack_q4_0, layouts::kQ8_0, &load_q8_0, Q4_0Scale, Acc16>;

// The row kernels' multi-row form: one row at a time through `dot`.
template <float (*Dot)(int64_t, const uint8_t*, const uint8_t*)>
void rows_of(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows, const uint8_t* activation_row,
             float* out) {
    for (int64_t r = 0; r < n_rows; ++r) out[r] = Dot(n, weights + static_cast<uint64_t>(r) * weight_row_bytes, activation_row);
}

}  // namespace
}  // namespace inferscope::simd
