#pragma once
// Element-wise activation functions and the row norm of the forward pass, per kernel family.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

struct ActivationKernels {
    // gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g)
    void (*swiglu)(float* gate, const float* up, int64_t n) = nullptr;
    // gate[i] = gelu_tanh(gate[i]) * up[i] through llama.cpp's F16 table (geglu_inplace, ops.h)
    void (*geglu)(float* gate, const float* up, int64_t n) = nullptr;
    // out[i] = x[i] * (1 / sqrt(mean(x^2) + eps)) * weight[i], as rms_norm_row (ops.h): each
    // square rounded to float and summed in double, the scaling in float.
    void (*rms_norm)(const float* x, const float* weight, int64_t n, float eps, float* out) = nullptr;
};

// Kernels of the family `isa`; members a family does not provide come from the one below.
ActivationKernels activation_kernels(CpuIsa isa);

namespace simd {
ActivationKernels avx2_activation_kernels();
ActivationKernels avx512_activation_kernels();
ActivationKernels neon_activation_kernels();
}  // namespace simd

}  // namespace inferscope
