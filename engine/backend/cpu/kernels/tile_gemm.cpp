#include "engine/backend/cpu/kernels/tile_gemm.h"

#include "engine/backend/cpu/kernels/family_chain.h"

namespace inferscope {

TileGemmFn tile_gemm_family_kernel(GgmlType weight_type, CpuIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case CpuIsa::Avx2: return simd::avx2_tile_gemm_kernel(weight_type);
        case CpuIsa::AvxVnni: return simd::avxvnni_tile_gemm_kernel(weight_type);
        case CpuIsa::Avx512: return simd::avx512_tile_gemm_kernel(weight_type);
#endif
        default: return nullptr;
    }
}

TileGemmFn tile_gemm_kernel(GgmlType weight_type, CpuIsa isa) {
    return first_provided_kernel(isa, [weight_type](CpuIsa family) { return tile_gemm_family_kernel(weight_type, family); });
}

}  // namespace inferscope
