// AVX-512 activation functions. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
#include <immintrin.h>

#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/exp_avx512.h"

namespace inferscope::simd {
namespace {

void swiglu(float* gate, const float* up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - i)) - 1u);
        const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
        const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), g))));
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
    }
}

}  // namespace

ActivationKernels avx512_activation_kernels() {
    ActivationKernels k;
    k.swiglu = &swiglu;
    return k;
}

}  // namespace inferscope::simd
