#pragma once
// e^x on 8 floats, for the AVX2 kernel files only (include it from *_avx2.cpp: it defines an
// internal-linkage function, one copy per file, as those files require).
#include <immintrin.h>

#include "engine/backend/cpu/kernels/exp_constants.h"

namespace inferscope::simd {
namespace {

// The steps and polynomial of exp_avx512.h's exp_ps, with the same results: x = n ln2 + r,
// e^r by a degree-6 polynomial, times 2^n; inputs below -87.3 give 0, above 88.7 e^88.7.
// AVX2 has no vscalefps, so 2^n is built in the exponent field, as two factors 2^(n/2) and
// 2^(n - n/2): n reaches 128 at x = 88.7, one past what a single factor can hold. Both
// products by a power of two are exact for every n the clamp allows.
inline __m256 exp_ps(__m256 x) {
    const __m256 clamped = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLow)), _mm256_set1_ps(kExpHigh));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(clamped, _mm256_set1_ps(kLog2e)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2High), clamped);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Low), r);
    __m256 poly = _mm256_set1_ps(kExpPolynomial[0]);
#pragma GCC unroll 8
    for (int c = 1; c < kExpTerms; ++c) poly = _mm256_fmadd_ps(poly, r, _mm256_set1_ps(kExpPolynomial[c]));
    const __m256i whole = _mm256_cvtps_epi32(n);
    const __m256i half = _mm256_srai_epi32(whole, 1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 first = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(half, bias), 23));
    const __m256 second = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(_mm256_sub_epi32(whole, half), bias), 23));
    const __m256 result = _mm256_mul_ps(_mm256_mul_ps(poly, first), second);
    return _mm256_blendv_ps(result, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kExpLow), _CMP_LT_OQ));
}

}  // namespace
}  // namespace inferscope::simd
