#pragma once
// e^x on 16 floats, for the AVX-512 kernel files only (include it from *_avx512.cpp: it
// defines an internal-linkage function, one copy per file, as those files require).
#include <immintrin.h>

#include "engine/backend/cpu/kernels/exp_constants.h"

namespace inferscope::simd {
namespace {

// x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial, times 2^n. Relative error
// below 2e-7; inputs below -87.3 give 0 and inputs above 88.7 give e^88.7 (3.4e38), which
// keeps quotients such as x / (1 + e^-x) finite and exact to float precision.
inline __m512 exp_ps(__m512 x) {
    const __m512 clamped = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(kExpLow)), _mm512_set1_ps(kExpHigh));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(clamped, _mm512_set1_ps(kLog2e)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2High), clamped);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Low), r);
    __m512 poly = _mm512_set1_ps(kExpPolynomial[0]);
#pragma GCC unroll 8
    for (int c = 1; c < kExpTerms; ++c) poly = _mm512_fmadd_ps(poly, r, _mm512_set1_ps(kExpPolynomial[c]));
    const __m512 result = _mm512_scalef_ps(poly, n);
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kExpLow), _CMP_LT_OQ), result, _mm512_setzero_ps());
}

}  // namespace
}  // namespace inferscope::simd
