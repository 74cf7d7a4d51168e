// AVX2 activation functions, the AVX-512 ones (activation_avx512.cpp) eight lanes wide.
// Compiled with AVX2 flags (see engine/CMakeLists.txt): everything stays in an anonymous
// namespace.
#include <immintrin.h>

#include <cmath>

#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/exp_avx2.h"
#include "engine/backend/cpu/kernels/first_lanes_avx2.h"

namespace inferscope::simd {
namespace {

// Whole vectors with plain loads and stores; only a row's tail is masked (vmaskmov stores
// cost several times a plain one). load8/store8: `mask` null for a whole vector.
inline __m256 load8(const float* p, const __m256i* mask) { return mask ? _mm256_maskload_ps(p, *mask) : _mm256_loadu_ps(p); }
inline void store8(float* p, const __m256i* mask, __m256 v) {
    if (mask) {
        _mm256_maskstore_ps(p, *mask, v);
    } else {
        _mm256_storeu_ps(p, v);
    }
}

// fn(i, mask) over the row in steps of 8, mask null but at the tail.
template <typename Fn>
inline void over_row(int64_t n, Fn fn) {
    const int64_t whole = n / 8 * 8;
    for (int64_t i = 0; i < whole; i += 8) fn(i, static_cast<const __m256i*>(nullptr));
    if (whole < n) {
        const __m256i tail = first_lanes8(n - whole);
        fn(whole, &tail);
    }
}

// The squares summed in double lanes (see activation_avx512.cpp: the order does not change
// the sum), so the result equals rms_norm_row's.
void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out) {
    __m256d sum_low = _mm256_setzero_pd(), sum_high = _mm256_setzero_pd();
    over_row(n, [&](int64_t i, const __m256i* mask) {
        const __m256 v = load8(x + i, mask);
        const __m256 square = _mm256_mul_ps(v, v);
        sum_low = _mm256_add_pd(sum_low, _mm256_cvtps_pd(_mm256_castps256_ps128(square)));
        sum_high = _mm256_add_pd(sum_high, _mm256_cvtps_pd(_mm256_extractf128_ps(square, 1)));
    });
    alignas(32) double partial[4];
    _mm256_store_pd(partial, _mm256_add_pd(sum_low, sum_high));
    const double sum_squares = (partial[0] + partial[1]) + (partial[2] + partial[3]);
    const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
    const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(mean + eps));
    over_row(n, [&](int64_t i, const __m256i* mask) {
        store8(out + i, mask, _mm256_mul_ps(_mm256_mul_ps(load8(x + i, mask), scale), load8(weight + i, mask)));
    });
}

void swiglu(float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    over_row(n, [&](int64_t i, const __m256i* mask) {
        const __m256 g = load8(gate + i, mask);
        const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
        store8(gate + i, mask, _mm256_mul_ps(silu, load8(up + i, mask)));
    });
}

}  // namespace

ActivationKernels avx2_activation_kernels() {
    ActivationKernels k;
    k.swiglu = &swiglu;
    k.rms_norm = &rms_norm;
    return k;
}

}  // namespace inferscope::simd
