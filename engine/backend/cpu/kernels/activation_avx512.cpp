// AVX-512 activation functions. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include <cmath>

#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/exp_avx512.h"
#include "engine/backend/cpu/kernels/first_lanes.h"

namespace inferscope::simd {
namespace {

// The squares summed in double lanes rather than in one running sum: floats of a row's range
// add exactly in double, so the order does not change the sum (a row spanning more than 2^29
// in magnitude could differ in the double's last bits, far below the float the mean becomes).
// Several lanes also avoid a scalar loop's chain of dependent double additions, which is
// bound by the addition latency.
void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out) {
    __m512d sum_low = _mm512_setzero_pd(), sum_high = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(first_lanes(n - i), x + i);
        const __m512 square = _mm512_mul_ps(v, v);
        sum_low = _mm512_add_pd(sum_low, _mm512_cvtps_pd(_mm512_castps512_ps256(square)));
        sum_high = _mm512_add_pd(sum_high, _mm512_cvtps_pd(_mm512_extractf32x8_ps(square, 1)));
    }
    const double sum_squares = _mm512_reduce_add_pd(_mm512_add_pd(sum_low, sum_high));
    const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
    const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(mean + eps));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 scaled = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(scaled, _mm512_maskz_loadu_ps(m, weight + i)));
    }
}

void swiglu(float* gate, const float* up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

}  // namespace

ActivationKernels avx512_activation_kernels() { return {.swiglu = &swiglu, .rms_norm = &rms_norm}; }

}  // namespace inferscope::simd
