#pragma once
// Helpers that the row dot kernels of both instruction sets use as they are: unaligned
// loads and stores of block fields, f16 scalars, the horizontal sums of eight lanes and the
// unpacking of the K-quants' packed 6-bit scales, all in 128- and 256-bit operations.
//
// Include it only from *_avx2.cpp / *_avx512.cpp files: everything is in an anonymous
// namespace, so each file compiles its own copy with its own flags and no copy compiled for
// one instruction set can stand in for another's (engine/CMakeLists.txt).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"

namespace inferscope::simd {
namespace {

inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
inline __m128i load128(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline void store128(uint8_t* p, __m128i v) { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }

inline void store_f32(uint8_t* p, float v) { std::memcpy(p, &v, sizeof(v)); }

inline float f16_at(const uint8_t* p) { return _cvtsh_ss(load_u16(p)); }

inline float hsum(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

// The largest of the eight unsigned 32-bit lanes of v.
inline uint32_t max_u32_lanes(__m256i v) {
    __m128i s = _mm_max_epu32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_max_epu32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_max_epu32(s, _mm_shuffle_epi32(s, 1));
    return static_cast<uint32_t>(_mm_cvtsi128_si32(s));
}

// The sum of the eight 32-bit lanes of v.
inline int32_t sum_i32_lanes(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
    return _mm_cvtsi128_si32(s);
}

// The eight 6-bit scales and eight 6-bit mins of a Q4_K/Q5_K block (12 packed bytes) as
// bytes: scales in bytes 0..7, mins in bytes 8..15 (k4_scale_min in quant_blocks.h).
inline __m128i k4_scales_mins(const uint8_t* packed) {
    const uint32_t u0 = load_u32(packed), u1 = load_u32(packed + 4), u2 = load_u32(packed + 8);
    const uint32_t sc03 = u0 & 0x3F3F3F3Fu;
    const uint32_t m03 = u1 & 0x3F3F3F3Fu;
    const uint32_t sc47 = (u2 & 0x0F0F0F0Fu) | ((u0 >> 2) & 0x30303030u);
    const uint32_t m47 = ((u2 >> 4) & 0x0F0F0F0Fu) | ((u1 >> 2) & 0x30303030u);
    return _mm_set_epi32(static_cast<int>(m47), static_cast<int>(m03), static_cast<int>(sc47), static_cast<int>(sc03));
}

// The sixteen signed scales (-32..31) of a Q3_K block (q3k_scales in quant_blocks.h).
inline __m128i q3k_scales(const uint8_t* packed) {
    const uint32_t a0 = load_u32(packed), a1 = load_u32(packed + 4), t = load_u32(packed + 8);
    const uint32_t s0 = (a0 & 0x0F0F0F0Fu) | ((t << 4) & 0x30303030u);
    const uint32_t s1 = (a1 & 0x0F0F0F0Fu) | ((t << 2) & 0x30303030u);
    const uint32_t s2 = ((a0 >> 4) & 0x0F0F0F0Fu) | (t & 0x30303030u);
    const uint32_t s3 = ((a1 >> 4) & 0x0F0F0F0Fu) | ((t >> 2) & 0x30303030u);
    const __m128i s = _mm_set_epi32(static_cast<int>(s3), static_cast<int>(s2), static_cast<int>(s1), static_cast<int>(s0));
    return _mm_sub_epi8(s, _mm_set1_epi8(32));
}

}  // namespace
}  // namespace inferscope::simd
