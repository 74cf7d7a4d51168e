// NEON activation functions, the AVX2 ones (activation_avx2.cpp) four lanes wide. Advanced
// SIMD needs no extra flags; everything stays in an anonymous namespace.
#include <arm_neon.h>

#include <cmath>

#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/exp_neon.h"
#include "engine/backend/cpu/kernels/lanes4_neon.h"

namespace inferscope::simd {
namespace {

// The squares summed in double lanes (DoubleSum4), so the result equals rms_norm_row's.
void rms_norm(const float* x, const float* weight, int64_t n, float eps, float* out) {
    DoubleSum4 sum_squares;
    over_lanes4(n, [&](int64_t i, int64_t valid) {
        const float32x4_t v = load_lanes4(x + i, valid);
        sum_squares.add(vmulq_f32(v, v));
    });
    const float mean = static_cast<float>(sum_squares.total() / static_cast<double>(n));
    const float32x4_t scale = vdupq_n_f32(1.0f / std::sqrt(mean + eps));
    over_lanes4(n, [&](int64_t i, int64_t valid) {
        const float32x4_t scaled = vmulq_f32(load_lanes4(x + i, valid), scale);
        store_lanes4(out + i, valid, vmulq_f32(scaled, load_lanes4(weight + i, valid)));
    });
}

void swiglu(float* gate, const float* up, int64_t n) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    over_lanes4(n, [&](int64_t i, int64_t valid) {
        const float32x4_t g = load_lanes4(gate + i, valid);
        const float32x4_t silu = vdivq_f32(g, vaddq_f32(one, exp_ps(vnegq_f32(g))));
        store_lanes4(gate + i, valid, vmulq_f32(silu, load_lanes4(up + i, valid)));
    });
}

}  // namespace

ActivationKernels neon_activation_kernels() { return {.swiglu = &swiglu, .rms_norm = &rms_norm}; }

}  // namespace inferscope::simd
