#include "engine/backend/cpu/kernels/tile_gemm.h"

namespace inferscope {

TileGemmFn tile_gemm_kernel(GgmlType weight_type, CpuIsa isa) {
    switch (isa) {
        case CpuIsa::Scalar: return nullptr;
        case CpuIsa::Avx2: return simd::avx2_tile_gemm_kernel(weight_type);
        case CpuIsa::Avx512: {
            TileGemmFn kernel = simd::avx512_tile_gemm_kernel(weight_type);
            return kernel != nullptr ? kernel : simd::avx2_tile_gemm_kernel(weight_type);
        }
    }
    return nullptr;
}

}  // namespace inferscope
