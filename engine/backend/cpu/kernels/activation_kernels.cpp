#include "engine/backend/cpu/kernels/activation_kernels.h"

#include "engine/backend/cpu/ops.h"

namespace inferscope {

namespace {

void fill_missing(ActivationKernels& k, const ActivationKernels& fallback) {
    if (k.swiglu == nullptr) k.swiglu = fallback.swiglu;
    if (k.geglu == nullptr) k.geglu = fallback.geglu;
    if (k.rms_norm == nullptr) k.rms_norm = fallback.rms_norm;
}

}  // namespace

ActivationKernels activation_kernels(CpuIsa isa) {
    ActivationKernels scalar;
    scalar.swiglu = &swiglu_inplace;
    scalar.geglu = &geglu_inplace;
    scalar.rms_norm = &rms_norm_row;
    if (isa == CpuIsa::Scalar) return scalar;
    ActivationKernels avx2 = simd::avx2_activation_kernels();
    fill_missing(avx2, scalar);
    if (isa == CpuIsa::Avx2) return avx2;
    ActivationKernels avx512 = simd::avx512_activation_kernels();
    fill_missing(avx512, avx2);
    return avx512;
}

}  // namespace inferscope
