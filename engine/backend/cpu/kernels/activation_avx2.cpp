// AVX2 activation functions, the AVX-512 ones (activation_avx512.cpp) eight lanes wide.
// Compiled with AVX2 flags (see engine/CMakeLists.txt): everything stays in an anonymous
// namespace.
#include <immintrin.h>

#include <cmath>

#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/exp_avx2.h"
#include "engine/backend/cpu/kernels/lanes8_avx2.h"

namespace inferscope::simd {
namespace {

// The squares summed in double lanes (DoubleSum8), so the result equals rms_norm_row's.
void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out) {
    DoubleSum8 sum_squares;
    over_lanes8(n, [&](int64_t i, const __m256i* tail) {
        const __m256 v = load_lanes8(x + i, tail);
        sum_squares.add(_mm256_mul_ps(v, v));
    });
    const float mean = static_cast<float>(sum_squares.total() / static_cast<double>(n));
    const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(mean + eps));
    over_lanes8(n, [&](int64_t i, const __m256i* tail) {
        store_lanes8(out + i, tail, _mm256_mul_ps(_mm256_mul_ps(load_lanes8(x + i, tail), scale), load_lanes8(weight + i, tail)));
    });
}

void swiglu(float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    over_lanes8(n, [&](int64_t i, const __m256i* tail) {
        const __m256 g = load_lanes8(gate + i, tail);
        const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), g))));
        store_lanes8(gate + i, tail, _mm256_mul_ps(silu, load_lanes8(up + i, tail)));
    });
}

}  // namespace

ActivationKernels avx2_activation_kernels() { return {.swiglu = &swiglu, .rms_norm = &rms_norm}; }

}  // namespace inferscope::simd
