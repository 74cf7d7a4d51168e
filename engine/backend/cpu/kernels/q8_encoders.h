#pragma once
// The Q8_0, Q8_1 and Q8_K activation encoders of the row dot kernels, written once for every
// instruction set (AVX2, AVX-512, NEON): the block loops, the checks that send a block to the
// scalar replicas of simd_encode_fallback.h (infinities, NaNs, a multiplier that overflows),
// the scales and Q8_1's sum. Bit-identical to quantize_row (see row_dot_ymm.h).
//
// The vector steps come from the instruction set's traits, a type each row_dot_<isa> file
// defines in its own anonymous namespace:
//
//   struct Isa {
//       static uint32_t absmax_bits(const float* x, int count);     // max |x| as float bits
//       static Sums quantize32(const float* x, float multiplier, uint8_t* q);  // 32 int8 at q
//       static int32_t total(Sums sums);                            // the sum of quantize32's lanes
//       static int first_of_magnitude(const float* x, uint32_t bits);  // in x[0..255]
//       static void store_q8_k_bsums(uint8_t* block);               // from the block's quants
//   };
//
// Include it only from *_avx2.cpp / *_avx512.cpp / *_neon.cpp files: everything is in an
// anonymous namespace, so each file compiles its own copy with its own flags and no copy
// compiled for one instruction set can stand in for another's (engine/CMakeLists.txt).
#if defined(__aarch64__)
#include <arm_neon.h>
#else
#include <immintrin.h>
#endif

#include <cmath>
#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/simd_encode_fallback.h"
#include "engine/formats/block_layouts.h"

namespace inferscope::simd {
namespace {

// The bits of +infinity: abs-value bit patterns order like the values, and any infinity or
// NaN compares >= this.
constexpr uint32_t kInfBits = 0x7F800000u;

// f as F16 bits, rounded to nearest even by the hardware conversion (f is finite here, so
// no NaN needs the reference's canonical form).
inline uint16_t f16_bits(float f) {
#if defined(__aarch64__)
    return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(f))), 0);
#else
    return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#endif
}

inline float bits_float(uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
}

// The common part of Q8_0 and Q8_1: the quants at qs, d and the quants' sum; false when the
// block needs the scalar replica.
template <class Isa>
inline bool q8_legacy_block(const float* x, uint8_t* qs, float& d, int32_t& sum) {
    const uint32_t bits = Isa::absmax_bits(x, 32);
    if (bits >= kInfBits) return false;
    const float amax = bits_float(bits);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    if (std::isinf(id)) return false;
    d = amax / 127.0f;
    sum = Isa::total(Isa::quantize32(x, id, qs));
    return true;
}

// Q8_0 (d, qs) or, kWithSum, Q8_1 (d, d * sum(qs), qs).
template <class Isa, bool kWithSum>
void encode_q8_legacy(const float* x, uint8_t* dst, int64_t n) {
    constexpr int kBlockBytes = kWithSum ? block_layouts::kQ8_1 : block_layouts::kQ8_0;
    constexpr int kQsOffset = kWithSum ? 4 : 2;
    for (int64_t b = 0; b < n / 32; ++b, x += 32, dst += kBlockBytes) {
        float d;
        int32_t sum;
        if (!q8_legacy_block<Isa>(x, dst + kQsOffset, d, sum)) {
            if constexpr (kWithSum) {
                fallback::encode_q8_1_block(x, dst);
            } else {
                fallback::encode_q8_0_block(x, dst);
            }
            continue;
        }
        store_u16(dst, f16_bits(d));
        if constexpr (kWithSum) store_u16(dst + 2, f16_bits(d * static_cast<float>(sum)));
    }
}
template <class Isa>
void encode_q8_0(const float* x, uint8_t* dst, int64_t n) {
    encode_q8_legacy<Isa, false>(x, dst, n);
}
template <class Isa>
void encode_q8_1(const float* x, uint8_t* dst, int64_t n) {
    encode_q8_legacy<Isa, true>(x, dst, n);
}

template <class Isa>
void encode_q8_k(const float* x, uint8_t* dst, int64_t n) {
    for (int64_t b = 0; b < n / 256; ++b, x += 256, dst += block_layouts::kQ8_K) {
        const uint32_t bits = Isa::absmax_bits(x, 256);
        if (bits >= kInfBits) {
            fallback::encode_q8_k_block(x, dst);
            continue;
        }
        if (bits == 0) {  // all zeros: d = 0, qs = 0, bsums = 0
            std::memset(dst, 0, block_layouts::kQ8_K);
            continue;
        }
        // The first element of largest magnitude, with its sign.
        const int first = Isa::first_of_magnitude(x, bits);
        const float iscale = -127.f / x[first];
        if (std::isinf(iscale)) {
            fallback::encode_q8_k_block(x, dst);
            continue;
        }
        // |iscale * x| <= 127 (+ rounding), so nearest-even rounding needs no clamp.
        for (int c = 0; c < 8; ++c) Isa::quantize32(x + 32 * c, iscale, dst + block_layouts::kQ8_KQs + 32 * c);
        Isa::store_q8_k_bsums(dst);
        const float d = 1 / iscale;
        std::memcpy(dst, &d, sizeof(d));
    }
}

}  // namespace
}  // namespace inferscope::simd
