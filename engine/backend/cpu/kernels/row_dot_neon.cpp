// NEON row dot products (ARM64; Advanced SIMD needs no extra flags): F32, F16 and BF16 rows in
// float lanes, every integer block format through widening 8-bit multiplies, and the F16,
// BF16, Q8_0, Q8_1 and Q8_K activation encoders (the Q8 ones from q8_encoders.h), which the
// dotprod and i8mm families take from here.
#include <bit>

#include "engine/backend/cpu/kernels/neon_float_rows.h"
#include "engine/backend/cpu/kernels/neon_row_dot_table.h"
#include "engine/backend/cpu/kernels/q8_encoders.h"

namespace inferscope::simd {
namespace {

inline float32x4_t load4_f32(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }
inline float32x4_t load4_f16(const uint8_t* p) { return vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(p))); }
// bf16 is the top half of an f32: widening it is a 16-bit shift.
inline float32x4_t load4_bf16(const uint8_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
}

inline float bf16_at(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// The plain-NEON step: each four elements widened to f32 lanes (the weight's once for all B),
// then fused multiply-adds.
template <int ElementBytes, float32x4_t (*Load4)(const uint8_t*)>
struct WidenedMac16 {
    template <int B>
    static void step(float32x4_t (&acc)[B][4], const uint8_t* w, const uint8_t* x, uint64_t x_stride) {
        for (int k = 0; k < 4; ++k) {
            const int64_t at = 4 * k * ElementBytes;
            const float32x4_t wk = Load4(w + at);
            for (int b = 0; b < B; ++b) acc[b][k] = vfmaq_f32(acc[b][k], wk, Load4(x + b * x_stride + at));
        }
    }
};

using F32Rows = FloatRows<4, WidenedMac16<4, &load4_f32>, &float_at>;
using F16Rows = FloatRows<2, WidenedMac16<2, &load4_f16>, &half_at>;
using BF16Rows = FloatRows<2, WidenedMac16<2, &load4_bf16>, &bf16_at>;

// The NEON steps of q8_encoders.h. vcvtnq_s32_f32 rounds to nearest even as the reference
// does; its saturation differs from x86's, but the encoders only quantize values within
// +-127 (plus rounding), where the two agree.
struct NeonEncoding {
    // max |x| over `count` floats (a multiple of 4), as the bits of a float.
    static uint32_t absmax_bits(const float* x, int count) {
        const uint32x4_t abs_mask = vdupq_n_u32(0x7FFFFFFFu);
        uint32x4_t m = vdupq_n_u32(0);
        for (int i = 0; i < count; i += 4) m = vmaxq_u32(m, vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x + i)), abs_mask));
        return vmaxvq_u32(m);
    }

    // x[0..31] * multiplier rounded to nearest even and saturated to int8 (32 bytes at q);
    // returns the int32 values summed lane by lane.
    static int32x4_t quantize32(const float* x, float multiplier, uint8_t* q) {
        int32x4_t rounded[8];
        int32x4_t sums = vdupq_n_s32(0);
        for (int k = 0; k < 8; ++k) {
            rounded[k] = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 4 * k), multiplier));
            sums = vaddq_s32(sums, rounded[k]);
        }
        for (int half = 0; half < 2; ++half) {
            const int32x4_t* r = rounded + 4 * half;
            const int16x8_t low = vcombine_s16(vqmovn_s32(r[0]), vqmovn_s32(r[1]));
            const int16x8_t high = vcombine_s16(vqmovn_s32(r[2]), vqmovn_s32(r[3]));
            vst1q_s8(reinterpret_cast<int8_t*>(q + 16 * half), vcombine_s8(vqmovn_s16(low), vqmovn_s16(high)));
        }
        return sums;
    }

    static int32_t total(int32x4_t sums) { return vaddvq_s32(sums); }

    // The index of the first of x[0..255] whose magnitude has the float bits `bits`.
    static int first_of_magnitude(const float* x, uint32_t bits) {
        const uint32x4_t target = vdupq_n_u32(bits), abs_mask = vdupq_n_u32(0x7FFFFFFFu);
        for (int i = 0; i < 256; i += 4) {
            const uint32x4_t hits = vceqq_u32(vandq_u32(vreinterpretq_u32_f32(vld1q_f32(x + i)), abs_mask), target);
            if (vmaxvq_u32(hits) == 0) continue;
            uint32_t lanes[4];
            vst1q_u32(lanes, hits);
            for (int j = 0; j < 4; ++j) {
                if (lanes[j] != 0) return i + j;
            }
        }
        return 0;
    }

    // Q8_K's bsums: the sum of each 16 quants.
    static void store_q8_k_bsums(uint8_t* dst) {
        for (int j = 0; j < 16; ++j) {
            const int16_t sum = vaddlvq_s8(vld1q_s8(reinterpret_cast<const int8_t*>(dst + layouts::kQ8_KQs + 16 * j)));
            store_u16(dst + layouts::kQ8_KBsums + 2 * j, static_cast<uint16_t>(sum));
        }
    }
};

// F16 rows: vcvt_f16_f32 rounds to nearest even (the default FPCR mode), keeps subnormals and
// overflows to infinity as the reference does; four elements with a NaN take the reference's
// canonical NaN.
void encode_f16(const float* x, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const float32x4_t v = vld1q_f32(x + i);
        if (vminvq_u32(vceqq_f32(v, v)) == 0) {
            for (int j = 0; j < 4; ++j) store_u16(dst + 2 * (i + j), fallback::fp32_to_fp16(x[i + j]));
            continue;
        }
        vst1_u16(reinterpret_cast<uint16_t*>(dst + 2 * i), vreinterpret_u16_f16(vcvt_f16_f32(v)));
    }
    for (; i < n; ++i) store_u16(dst + 2 * i, fallback::fp32_to_fp16(x[i]));
}

// BF16 rows: the top 16 bits rounded to nearest even in integer lanes; a NaN becomes quiet.
void encode_bf16(const float* x, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const uint32x4_t u = vreinterpretq_u32_f32(vld1q_f32(x + i));
        const uint32x4_t odd = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
        const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(u, vaddq_u32(odd, vdupq_n_u32(0x7FFF))), 16);
        const uint32x4_t quiet_nan = vorrq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(0x40));
        const uint32x4_t is_nan = vcgtq_u32(vandq_u32(u, vdupq_n_u32(0x7FFFFFFFu)), vdupq_n_u32(0x7F800000u));
        vst1_u16(reinterpret_cast<uint16_t*>(dst + 2 * i), vmovn_u32(vbslq_u32(is_nan, quiet_nan, rounded)));
    }
    for (; i < n; ++i) store_u16(dst + 2 * i, fallback::fp32_to_bf16(x[i]));
}

// The Q8 encoder of `activation_type` (null for the float encodings, set by their own rows).
EncodeRowFn q8_encoder(GgmlType activation_type) {
    switch (activation_type) {
        case GgmlType::Q8_0: return &encode_q8_0<NeonEncoding>;
        case GgmlType::Q8_1: return &encode_q8_1<NeonEncoding>;
        case GgmlType::Q8_K: return &encode_q8_k<NeonEncoding>;
        default: return nullptr;
    }
}

}  // namespace

RowDotKernels neon_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32: return batch_kernels<F32Rows>(GgmlType::F32);
        case GgmlType::F16: {
            RowDotKernels k = batch_kernels<F16Rows>(GgmlType::F16);
            k.encode = &encode_f16;
            return k;
        }
        case GgmlType::BF16: {
            RowDotKernels k = batch_kernels<BF16Rows>(GgmlType::BF16);
            k.encode = &encode_bf16;
            return k;
        }
        default: {
            RowDotKernels k = integer_row_dot_kernels<&accumulate_16_widening>(weight_type);
            k.encode = q8_encoder(k.activation_type);
            return k;
        }
    }
}

}  // namespace inferscope::simd
