#pragma once
// e^x on 4 floats, for the NEON kernel files only (include it from *_neon.cpp: it defines an
// internal-linkage function, one copy per file, as those files require).
#include <arm_neon.h>

#include "engine/backend/cpu/kernels/exp_constants.h"

namespace inferscope::simd {
namespace {

// exp_avx2.h's steps, fused where it fuses, so the two give the same results: x = n ln2 + r,
// e^r by a degree-6 polynomial, times 2^n built as two factors 2^(n/2) and 2^(n - n/2) in the
// exponent field (n reaches 128 at x = 88.7). The clamp takes the number where one operand is
// NaN, as x86's max/min return the bound for a NaN x.
inline float32x4_t exp_ps(float32x4_t x) {
    const float32x4_t clamped = vminnmq_f32(vmaxnmq_f32(x, vdupq_n_f32(kExpLow)), vdupq_n_f32(kExpHigh));
    const float32x4_t n = vrndnq_f32(vmulq_f32(clamped, vdupq_n_f32(kLog2e)));
    float32x4_t r = vfmsq_f32(clamped, n, vdupq_n_f32(kLn2High));
    r = vfmsq_f32(r, n, vdupq_n_f32(kLn2Low));
    float32x4_t poly = vdupq_n_f32(kExpPolynomial[0]);
#pragma GCC unroll 8
    for (int c = 1; c < kExpTerms; ++c) poly = vfmaq_f32(vdupq_n_f32(kExpPolynomial[c]), poly, r);
    const int32x4_t whole = vcvtnq_s32_f32(n);
    const int32x4_t half = vshrq_n_s32(whole, 1);
    const int32x4_t bias = vdupq_n_s32(127);
    const float32x4_t first = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(half, bias), 23));
    const float32x4_t second = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(vsubq_s32(whole, half), bias), 23));
    const float32x4_t result = vmulq_f32(vmulq_f32(poly, first), second);
    return vbslq_f32(vcltq_f32(x, vdupq_n_f32(kExpLow)), vdupq_n_f32(0.0f), result);
}

}  // namespace
}  // namespace inferscope::simd
