#pragma once
// Element-wise activation functions of the forward pass, per kernel family.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"

namespace inferscope {

struct ActivationKernels {
    // gate[i] = silu(gate[i]) * up[i], silu(g) = g / (1 + e^-g)
    void (*swiglu)(float* gate, const float* up, int64_t n) = nullptr;
};

// Kernels of the family `isa`; members a family does not provide come from the one below.
ActivationKernels activation_kernels(CpuIsa isa);

namespace simd {
ActivationKernels avx512_activation_kernels();
}  // namespace simd

}  // namespace inferscope
