#pragma once
// The 256-element super-blocks (Q2_K ... Q6_K, IQ4_XS) against Q8_K for the ARM64 row kernels:
// each format's decoder writes its values and sixteen scales, and one row loop over the
// extension's 16-value multiply-accumulate does the rest. In an anonymous namespace, as
// neon_blocks.h, so each kernel file keeps its own copy.
#include "engine/backend/cpu/kernels/neon_blocks.h"

namespace inferscope::simd {
namespace {

// One weight super-block decoded: value k times scales[k / 16] times d is element k's weight
// (less dmin times its min, for the formats with mins).
struct SuperBlock {
    alignas(16) int8_t values[layouts::kSuperElements];
    alignas(16) int8_t scales[16];
    alignas(16) int16_t mins[16];  // the formats with mins: per 16 elements
    float d = 0.0f;
    float dmin = 0.0f;
};

inline float float_at(const uint8_t* p) {
    float value;
    std::memcpy(&value, p, sizeof(value));
    return value;
}

// The activation block's sixteen sums of 16 quants against sixteen per-group mins.
inline int32_t bsums_dot(const uint8_t* activation_block, const int16_t mins[16]) {
    const uint8_t* bsums = activation_block + layouts::kQ8_KBsums;
    int32x4_t acc = vdupq_n_s32(0);
    for (int half = 0; half < 2; ++half) {
        const int16x8_t sums = vreinterpretq_s16_u8(vld1q_u8(bsums + 16 * half));
        const int16x8_t m = vld1q_s16(mins + 8 * half);
        acc = vmlal_s16(acc, vget_low_s16(sums), vget_low_s16(m));
        acc = vmlal_high_s16(acc, sums, m);
    }
    return vaddvq_s32(acc);
}

inline uint8x16_t shift_right(uint8x16_t v, int bits) { return vshlq_u8(v, vdupq_n_s8(static_cast<int8_t>(-bits))); }
inline void store_values(SuperBlock& out, int at, uint8x16_t v) { vst1q_s8(out.values + at, vreinterpretq_s8_u8(v)); }

struct Q2K {
    static constexpr int64_t kBytes = layouts::kQ2_K;
    static constexpr bool kHasMin = true;
    // Four 2-bit values per byte of qs (32 bytes per 128 elements, shifts 0, 2, 4, 6 give
    // elements 32 apart); scales: low nibble scale, high nibble min, per 16 elements.
    static void decode(const uint8_t* w, SuperBlock& out) {
        for (int half = 0; half < 2; ++half) {
            const uint8x16_t q0 = vld1q_u8(w + 16 + 32 * half), q1 = vld1q_u8(w + 32 + 32 * half);
            for (int step = 0; step < 4; ++step) {
                store_values(out, 128 * half + 32 * step, vandq_u8(shift_right(q0, 2 * step), vdupq_n_u8(3)));
                store_values(out, 128 * half + 32 * step + 16, vandq_u8(shift_right(q1, 2 * step), vdupq_n_u8(3)));
            }
        }
        const uint8x16_t packed = vld1q_u8(w);
        vst1q_u8(reinterpret_cast<uint8_t*>(out.scales), vandq_u8(packed, vdupq_n_u8(0x0F)));
        const uint8x16_t mins = vshrq_n_u8(packed, 4);
        vst1q_s16(out.mins, vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(mins))));
        vst1q_s16(out.mins + 8, vreinterpretq_s16_u16(vmovl_high_u8(mins)));
        out.d = half_at(w + layouts::kQ2_KD);
        out.dmin = half_at(w + layouts::kQ2_KD + 2);
    }
};

struct Q3K {
    static constexpr int64_t kBytes = layouts::kQ3_K;
    static constexpr bool kHasMin = false;
    // 2-bit values as Q2_K's (qs after the 32 bytes of hmask), less 4 where the element's
    // hmask bit (bit 4 x half + step of byte l) is clear; sixteen 6-bit scales, offset by 32.
    static void decode(const uint8_t* w, SuperBlock& out) {
        const uint8x16_t hmask[2] = {vld1q_u8(w), vld1q_u8(w + 16)};
        for (int half = 0; half < 2; ++half) {
            for (int step = 0; step < 4; ++step) {
                const uint8x16_t bit = vdupq_n_u8(static_cast<uint8_t>(1u << (4 * half + step)));
                for (int part = 0; part < 2; ++part) {
                    const uint8x16_t q = vld1q_u8(w + 32 + 32 * half + 16 * part);
                    const uint8x16_t low = vandq_u8(shift_right(q, 2 * step), vdupq_n_u8(3));
                    const uint8x16_t four_if_clear = vbicq_u8(vdupq_n_u8(4), vtstq_u8(hmask[part], bit));
                    store_values(out, 128 * half + 32 * step + 16 * part, vsubq_u8(low, four_if_clear));
                }
            }
        }
        const uint8_t* packed = w + 96;
        for (int j = 0; j < 16; ++j) {
            const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
            const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
            out.scales[j] = static_cast<int8_t>((low | (high << 4)) - 32);
        }
        out.d = half_at(w + layouts::kQ3_KD);
    }
};

// Q4_K and Q5_K: eight 6-bit scales and mins (per 32 elements) packed in 12 bytes.
inline void k4_scales_mins(const uint8_t* w, SuperBlock& out) {
    const uint8_t* packed = w + 4;
    for (int j = 0; j < 8; ++j) {
        const int scale = j < 4 ? packed[j] & 63 : (packed[j + 4] & 0xF) | ((packed[j - 4] >> 6) << 4);
        const int min = j < 4 ? packed[j + 4] & 63 : (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
        out.scales[2 * j] = out.scales[2 * j + 1] = static_cast<int8_t>(scale);
        out.mins[2 * j] = out.mins[2 * j + 1] = static_cast<int16_t>(min);
    }
    out.d = half_at(w);
    out.dmin = half_at(w + 2);
}

// Q4_K's and Q5_K's values: chunk c of 32 bytes at qs holds elements 64c + l (low nibbles) and
// 64c + 32 + l (high ones); Q5_K adds bit 2c (low) or 2c + 1 (high) of qh[l] as 16.
template <bool FifthBits>
inline void k4_values(const uint8_t* qh, const uint8_t* qs, SuperBlock& out) {
    for (int chunk = 0; chunk < 4; ++chunk) {
        for (int part = 0; part < 2; ++part) {
            const uint8x16_t q = vld1q_u8(qs + 32 * chunk + 16 * part);
            uint8x16_t low = vandq_u8(q, vdupq_n_u8(0x0F)), high = vshrq_n_u8(q, 4);
            if constexpr (FifthBits) {
                const uint8x16_t h = vld1q_u8(qh + 16 * part), sixteen = vdupq_n_u8(16);
                low = vorrq_u8(low, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(1u << (2 * chunk)))), sixteen));
                high = vorrq_u8(high, vandq_u8(vtstq_u8(h, vdupq_n_u8(static_cast<uint8_t>(2u << (2 * chunk)))), sixteen));
            }
            store_values(out, 64 * chunk + 16 * part, low);
            store_values(out, 64 * chunk + 32 + 16 * part, high);
        }
    }
}

struct Q4K {
    static constexpr int64_t kBytes = layouts::kQ4_K;
    static constexpr bool kHasMin = true;
    static void decode(const uint8_t* w, SuperBlock& out) {
        k4_values<false>(nullptr, w + 16, out);
        k4_scales_mins(w, out);
    }
};

struct Q5K {
    static constexpr int64_t kBytes = layouts::kQ5_K;
    static constexpr bool kHasMin = true;
    static void decode(const uint8_t* w, SuperBlock& out) {
        k4_values<true>(w + 16, w + 48, out);
        k4_scales_mins(w, out);
    }
};

struct Q6K {
    static constexpr int64_t kBytes = layouts::kQ6_K;
    static constexpr bool kHasMin = false;
    // Per 128 elements: 64 bytes of low nibbles (elements l, l + 32 in bytes l, l + 32; l + 64,
    // l + 96 in their high nibbles) and 32 bytes of high 2-bit pairs (bits 2k of byte l for
    // element l + 32k), offset by 32; signed 8-bit scales per 16 elements.
    static void decode(const uint8_t* w, SuperBlock& out) {
        for (int half = 0; half < 2; ++half) {
            for (int part = 0; part < 2; ++part) {
                const uint8_t* ql = w + 64 * half + 16 * part;
                const uint8x16_t lows[2] = {vld1q_u8(ql), vld1q_u8(ql + 32)};
                const uint8x16_t qh = vld1q_u8(w + 128 + 32 * half + 16 * part);
                for (int k = 0; k < 4; ++k) {
                    const uint8x16_t nibble = k < 2 ? vandq_u8(lows[k], vdupq_n_u8(0x0F)) : vshrq_n_u8(lows[k - 2], 4);
                    const uint8x16_t top = vandq_u8(vshlq_u8(qh, vdupq_n_s8(static_cast<int8_t>(4 - 2 * k))), vdupq_n_u8(0x30));
                    store_values(out, 128 * half + 32 * k + 16 * part, vsubq_u8(vorrq_u8(nibble, top), vdupq_n_u8(32)));
                }
            }
        }
        vst1q_s8(out.scales, vld1q_s8(reinterpret_cast<const int8_t*>(w + 192)));
        out.d = half_at(w + layouts::kQ6_KD);
    }
};

struct IQ4XS {
    static constexpr int64_t kBytes = layouts::kIQ4_XS;
    static constexpr bool kHasMin = false;
    // Eight groups of 32 IQ4 levels laid out as IQ4_NL blocks; group g's 6-bit scale (offset
    // by 32) has its low four bits in nibble g % 2 of scales_l[g / 2], its high two in bits 2g
    // of scales_h.
    static void decode(const uint8_t* w, SuperBlock& out) {
        for (int group = 0; group < 8; ++group) {
            const int8x16x2_t values = iq4_values(w + layouts::kIQ4_XSQs + 16 * group);
            vst1q_s8(out.values + 32 * group, values.val[0]);
            vst1q_s8(out.values + 32 * group + 16, values.val[1]);
        }
        const int scales_h = w[2] | (w[3] << 8);
        for (int group = 0; group < 8; ++group) {
            const int low = (w[4 + group / 2] >> (4 * (group % 2))) & 0xF;
            const int high = (scales_h >> (2 * group)) & 3;
            out.scales[2 * group] = out.scales[2 * group + 1] = static_cast<int8_t>((low | (high << 4)) - 32);
        }
        out.d = half_at(w);
    }
};

// sum_k values[k] x scales[k / 16] x q8[k], exact.
template <Accumulate16 Acc16>
inline int32_t scaled_super_block_sum(const SuperBlock& block, const int8_t* q8) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int group = 0; group < 16; ++group) {
        const int32x4_t products = Acc16(vdupq_n_s32(0), vld1q_s8(block.values + 16 * group), vld1q_s8(q8 + 16 * group));
        acc = vmlaq_n_s32(acc, products, block.scales[group]);
    }
    return vaddvq_s32(acc);
}

// Rows of super-blocks of `Format` against Q8_K: per block (dx x d) x sum, less
// (dx x dmin) x min_sum for the formats with mins. B activation rows (row i at
// x + i * x_stride) against one weight row, each super-block decoded once; every activation
// row's float steps are those of B = 1.
template <class Format, Accumulate16 Acc16>
struct SuperBlockRows {
    template <int B>
    static void rows(int64_t n, const uint8_t* w, const uint8_t* x, uint64_t x_stride, float* out, int64_t out_stride) {
        SuperBlock block;
        float sum[B] = {};
        for (int64_t b = 0; b < n / layouts::kSuperElements; ++b, w += Format::kBytes, x += layouts::kQ8_K) {
            Format::decode(w, block);
            for (int i = 0; i < B; ++i) {
                const uint8_t* xb = x + static_cast<uint64_t>(i) * x_stride;
                const float dx = float_at(xb);
                const auto* q8 = reinterpret_cast<const int8_t*>(xb + layouts::kQ8_KQs);
                const float scaled = (dx * block.d) * static_cast<float>(scaled_super_block_sum<Acc16>(block, q8));
                if constexpr (Format::kHasMin) {
                    sum[i] += scaled - (dx * block.dmin) * static_cast<float>(bsums_dot(xb, block.mins));
                } else {
                    sum[i] += scaled;
                }
            }
        }
        for (int i = 0; i < B; ++i) out[i * out_stride] = sum[i];
    }
};
}  // namespace
}  // namespace inferscope::simd
