#include "engine/backend/cpu/kernels/activation_kernels.h"

#include "engine/backend/cpu/kernels/family_chain.h"
#include "engine/backend/cpu/ops.h"

namespace inferscope {

namespace {

// A family's own kernels; null members (and families this build lacks) provide none.
ActivationKernels family_kernels(CpuIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case CpuIsa::Avx2: return simd::avx2_activation_kernels();
        case CpuIsa::Avx512: return simd::avx512_activation_kernels();
#elif defined(__aarch64__)
        case CpuIsa::Neon: return simd::neon_activation_kernels();
#endif
        default: return {};
    }
}

}  // namespace

ActivationKernels activation_kernels(CpuIsa isa) {
    if (isa == CpuIsa::Scalar) {
        ActivationKernels scalar;
        scalar.swiglu = &swiglu_inplace;
        scalar.geglu = &geglu_inplace;
        scalar.rms_norm = &rms_norm_row;
        return scalar;
    }
    ActivationKernels own = family_kernels(isa);
    take_missing(own, activation_kernels(runnable_family_below(isa)), &ActivationKernels::swiglu, &ActivationKernels::geglu,
                 &ActivationKernels::rms_norm);
    return own;
}

}  // namespace inferscope
