#pragma once
// Unpacking of 256-element super-blocks (Q2_K ... Q6_K, IQ4_XS), of the 32-element blocks'
// nibbles, IQ4 level lookups and the F16 scale conversion for the tiled GEMM kernels, in 256-bit operations that both the AVX2
// and the AVX-512 files can compile. Include it only from *_avx2.cpp / *_avx512.cpp files: everything is in an
// anonymous namespace, one copy per instruction-set family (engine/CMakeLists.txt).
#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

namespace inferscope::simd {
namespace {

inline float half_to_float(uint16_t h) { return _cvtsh_ss(h); }

// The sixteen IQ4 levels as bytes, plus `Bias` (0: signed levels; 128: unsigned, for the
// K-quant kind's offset), for byte shuffles by nibble.
template <int Bias>
inline __m128i iq4_levels() {
    const __m128i levels = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kIQ4NLValues));
    return _mm_add_epi8(levels, _mm_set1_epi8(static_cast<char>(Bias)));
}
// The 32 nibbles of the 16 bytes at qs in element order: the low nibbles, then the high ones
// (the layout of the 32-element blocks' packed quants).
inline __m256i block_nibbles(const uint8_t* qs) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(q, 4), m), _mm_and_si128(q, m));
}
// The 32 elements of a group whose nibbles are the 16 bytes at qs, looked up in `levels`.
inline __m256i iq4_group(const uint8_t* qs, __m128i levels) {
    const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
    const __m128i m = _mm_set1_epi8(0x0F);
    return _mm256_set_m128i(_mm_shuffle_epi8(levels, _mm_and_si128(_mm_srli_epi16(q, 4), m)),
                            _mm_shuffle_epi8(levels, _mm_and_si128(q, m)));
}

// Decoders: one super-block -> 256 unsigned values u <= kMaxValue in element order, plus per
// group (of kGroup elements) the float scale d * sc and, for formats with mins, dmin * m.
// The value that multiplies the scale is (u - kOffset).
inline void k4_scale_min(int j, const uint8_t* scales, int& sc, int& mn) {
    if (j < 4) {
        sc = scales[j] & 63;
        mn = scales[j + 4] & 63;
    } else {
        sc = (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4);
        mn = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
}

inline __m256i nibbles_lo(__m256i v) { return _mm256_and_si256(v, _mm256_set1_epi8(0x0F)); }
inline __m256i nibbles_hi(__m256i v) { return _mm256_and_si256(_mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0F)); }
inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline void store256(uint8_t* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }
// Bit `bit` of every byte, as 0 or `value`.
inline __m256i bit_as(__m256i bytes, int bit, int value) {
    const __m256i one = _mm256_set1_epi8(static_cast<char>(1u << bit));
    return _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(bytes, one), one), _mm256_set1_epi8(static_cast<char>(value)));
}

// Q4_K and Q5_K (kFifthBit: a fifth bit per value from qh): eight groups of 32 values with
// 6-bit scales and mins.
template <bool kFifthBit>
struct DecK4 {
    static constexpr int kBytes = kFifthBit ? block_layouts::kQ5_K : block_layouts::kQ4_K, kGroup = 32, kOffset = 0,
                         kMaxValue = kFifthBit ? 31 : 15;
    static constexpr bool kHasMin = true;
    static void decode(const uint8_t* b, uint8_t* v, float* scale, float* min) {
        const float d = half_to_float(load_u16(b)), dmin = half_to_float(load_u16(b + 2));
        const uint8_t* scales = b + 4;
        [[maybe_unused]] const __m256i qh = kFifthBit ? load256(b + 16) : _mm256_setzero_si256();
        const uint8_t* qs = b + (kFifthBit ? 48 : 16);
        for (int c = 0; c < 4; ++c) {
            const __m256i q = load256(qs + 32 * c);
            __m256i low = nibbles_lo(q), high = nibbles_hi(q);
            if constexpr (kFifthBit) {
                low = _mm256_or_si256(low, bit_as(qh, 2 * c, 16));
                high = _mm256_or_si256(high, bit_as(qh, 2 * c + 1, 16));
            }
            store256(v + 64 * c, low);
            store256(v + 64 * c + 32, high);
        }
        for (int j = 0; j < 8; ++j) {
            int sc, mn;
            k4_scale_min(j, scales, sc, mn);
            scale[j] = d * static_cast<float>(sc);
            min[j] = dmin * static_cast<float>(mn);
        }
    }
};
using DecQ4_K = DecK4<false>;
using DecQ5_K = DecK4<true>;
struct DecQ6_K {
    static constexpr int kBytes = block_layouts::kQ6_K, kGroup = 16, kOffset = 32, kMaxValue = 63;
    static constexpr bool kHasMin = false;
    static void decode(const uint8_t* b, uint8_t* v, float* scale, float*) {
        const uint8_t* ql = b;
        const uint8_t* qh = b + 128;
        const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
        const float d = half_to_float(load_u16(b + 208));
        const __m256i three = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            const __m256i l0 = load256(ql + 64 * h), l1 = load256(ql + 64 * h + 32);
            const __m256i hb = load256(qh + 32 * h);
            const __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(hb, three), 4);
            const __m256i h1 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 2), three), 4);
            const __m256i h2 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 4), three), 4);
            const __m256i h3 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 6), three), 4);
            uint8_t* o = v + 128 * h;
            store256(o, _mm256_or_si256(nibbles_lo(l0), h0));
            store256(o + 32, _mm256_or_si256(nibbles_lo(l1), h1));
            store256(o + 64, _mm256_or_si256(nibbles_hi(l0), h2));
            store256(o + 96, _mm256_or_si256(nibbles_hi(l1), h3));
        }
        for (int g = 0; g < 16; ++g) scale[g] = d * static_cast<float>(sc[g]);
    }
};
struct DecQ3_K {
    static constexpr int kBytes = block_layouts::kQ3_K, kGroup = 16, kOffset = 4, kMaxValue = 7;
    static constexpr bool kHasMin = false;
    static void decode(const uint8_t* b, uint8_t* v, float* scale, float*) {
        const __m256i hmask = load256(b);
        const uint8_t* qs = b + 32;
        const uint8_t* packed = b + 96;
        const float d = half_to_float(load_u16(b + 108));
        const __m256i three = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            const __m256i q = load256(qs + 32 * h);
            for (int s = 0; s < 4; ++s) {
                const int run = 4 * h + s;  // 32 elements, hmask bit `run`
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three);
                store256(v + 32 * run, _mm256_or_si256(low, bit_as(hmask, run, 4)));
            }
        }
        for (int j = 0; j < 16; ++j) {
            const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
            const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
            scale[j] = d * static_cast<float>((low | (high << 4)) - 32);
        }
    }
};
struct DecQ2_K {
    static constexpr int kBytes = block_layouts::kQ2_K, kGroup = 16, kOffset = 0, kMaxValue = 3;
    static constexpr bool kHasMin = true;
    static void decode(const uint8_t* b, uint8_t* v, float* scale, float* min) {
        const uint8_t* scales = b;
        const uint8_t* qs = b + 16;
        const float d = half_to_float(load_u16(b + 80)), dmin = half_to_float(load_u16(b + 82));
        const __m256i three = _mm256_set1_epi8(3);
        for (int h = 0; h < 2; ++h) {
            const __m256i q = load256(qs + 32 * h);
            for (int s = 0; s < 4; ++s) store256(v + 32 * (4 * h + s), _mm256_and_si256(_mm256_srli_epi16(q, 2 * s), three));
        }
        for (int g = 0; g < 16; ++g) {
            scale[g] = d * static_cast<float>(scales[g] & 0xF);
            min[g] = dmin * static_cast<float>(scales[g] >> 4);
        }
    }
};

// IQ4_XS: eight groups of 32 with signed 6-bit scales; the levels + 128 as unsigned values,
// the 128 coming off through the bsums like Q6_K's offset 32.
struct DecIQ4_XS {
    static constexpr int kBytes = block_layouts::kIQ4_XS, kGroup = 32, kOffset = 128, kMaxValue = 241;
    static constexpr bool kHasMin = false;
    static void decode(const uint8_t* b, uint8_t* v, float* scale, float*) {
        const float d = half_to_float(load_u16(b));
        const uint32_t scales_h = load_u16(b + 2);
        const uint32_t scales_l = static_cast<uint32_t>(load_i32(b + 4));
        const __m128i levels = iq4_levels<128>();
        for (int g = 0; g < 8; ++g) {
            store256(v + 32 * g, iq4_group(b + 8 + 16 * g, levels));
            const int ls = static_cast<int>(((scales_l >> (4 * g)) & 0xF) | (((scales_h >> (2 * g)) & 3) << 4));
            scale[g] = d * static_cast<float>(ls - 32);
        }
    }
};

}  // namespace
}  // namespace inferscope::simd
