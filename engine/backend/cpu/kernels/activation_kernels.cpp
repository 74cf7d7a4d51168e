#include "engine/backend/cpu/kernels/activation_kernels.h"

#include "engine/backend/cpu/ops.h"

namespace inferscope {

ActivationKernels activation_kernels(CpuIsa isa) {
    ActivationKernels scalar;
    scalar.swiglu = &swiglu_inplace;
    scalar.rms_norm = &rms_norm_row;
    if (isa != CpuIsa::Avx512) return scalar;  // AVX2 has no family of its own yet
    ActivationKernels avx512 = simd::avx512_activation_kernels();
    if (avx512.swiglu == nullptr) avx512.swiglu = scalar.swiglu;
    if (avx512.rms_norm == nullptr) avx512.rms_norm = scalar.rms_norm;
    return avx512;
}

}  // namespace inferscope
