// AVX-512 activation encoders of the row dot products (row_dot.h): F16, BF16 and, through
// q8_encoders.h, Q8_0, Q8_1 and Q8_K; bit-identical to quantize_row (see
// row_dot_ymm.h). Compiled with AVX-512 flags (see engine/CMakeLists.txt): everything but
// the entry point stays in an anonymous namespace.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/q8_encoders.h"
#include "engine/backend/cpu/kernels/row_dot_avx512.h"
#include "engine/backend/cpu/kernels/simd_encode_fallback.h"

namespace inferscope::simd {
namespace {

// The AVX-512 steps of q8_encoders.h.
struct Avx512Encoding {
    // max |x| over `count` floats (a multiple of 16), as the bits of a float.
    static uint32_t absmax_bits(const float* x, int count) {
        const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
        __m512i m = _mm512_setzero_si512();
        for (int i = 0; i < count; i += 16) {
            m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), abs_mask));
        }
        return max_u32_lanes(_mm512_castsi512_si256(_mm512_max_epu32(m, _mm512_shuffle_i32x4(m, m, 0x4E))));
    }

    // x[0..31] * multiplier rounded to nearest even and saturated to int8 (32 bytes at q);
    // returns the int32 values (their sum is the block's sum when nothing saturated).
    static __m512i quantize32(const float* x, float multiplier, uint8_t* q) {
        const __m512 m = _mm512_set1_ps(multiplier);
        const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), m));
        const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), m));
        store128(q, _mm512_cvtsepi32_epi8(i0));
        store128(q + 16, _mm512_cvtsepi32_epi8(i1));
        return _mm512_add_epi32(i0, i1);
    }

    static int32_t total(__m512i v) {
        return sum_i32_lanes(_mm512_castsi512_si256(_mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, 0x4E))));
    }

    // The index of the first of x[0..255] whose magnitude has the float bits `bits`.
    static int first_of_magnitude(const float* x, uint32_t bits) {
        const __m512i target = _mm512_set1_epi32(static_cast<int>(bits));
        const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
        for (int i = 0; i < 256; i += 16) {
            const __m512i a = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), abs_mask);
            const unsigned hits = _mm512_cmpeq_epi32_mask(a, target);
            if (hits != 0) return i + __builtin_ctz(hits);
        }
        return 0;
    }

    // Q8_K's bsums: the sum of each 16 quants (bias to unsigned, sum of absolute differences
    // to 0).
    static void store_q8_k_bsums(uint8_t* dst) {
        const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
        for (int c = 0; c < 4; ++c) {
            const __m512i sad = _mm512_sad_epu8(_mm512_xor_si512(load512(dst + kQ8_KQs + 64 * c), bias), _mm512_setzero_si512());
            const __m512i pairs = _mm512_add_epi64(sad, _mm512_bsrli_epi128(sad, 8));  // qword 0 of each lane: 16 quants
            const __m128i sums = _mm512_cvtepi64_epi16(pairs);                        // words 0, 2, 4, 6
            alignas(16) uint16_t words[8];
            _mm_store_si128(reinterpret_cast<__m128i*>(words), sums);
            for (int j = 0; j < 4; ++j) {
                const auto s = static_cast<int16_t>(static_cast<int>(words[2 * j]) - 16 * 128);
                store_u16(dst + kQ8_KBsums + 2 * (4 * c + j), static_cast<uint16_t>(s));
            }
        }
    }
};

void encode_f16(const float* x, uint8_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {  // NaN: the reference's canonical form
            for (int64_t j = i; j < std::min<int64_t>(n, i + 16); ++j) {
                store_u16(dst + 2 * j, fallback::fp32_to_fp16(x[j]));
            }
            continue;
        }
        _mm256_mask_storeu_epi16(dst + 2 * i, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
}

void encode_bf16(const float* x, uint8_t* dst, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i inf = _mm512_set1_epi32(static_cast<int>(kInfBits));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
        const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
        const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
        const __m512i r = _mm512_mask_mov_epi32(rounded, is_nan, quiet_nan);
        _mm256_mask_storeu_epi16(dst + 2 * i, m, _mm512_cvtepi32_epi16(r));
    }
}

}  // namespace

EncodeRowFn avx512_row_encoder(GgmlType activation_type) {
    switch (activation_type) {
        case GgmlType::F16: return &encode_f16;
        case GgmlType::BF16: return &encode_bf16;
        case GgmlType::Q8_0: return &encode_q8_0<Avx512Encoding>;
        case GgmlType::Q8_1: return &encode_q8_1<Avx512Encoding>;
        case GgmlType::Q8_K: return &encode_q8_k<Avx512Encoding>;
        default: return nullptr;
    }
}

}  // namespace inferscope::simd
