// The 256-bit tiled GEMM kernels (tile_gemm_ymm.h) compiled with AVX2 + AVX-VNNI flags:
// integer products through VPDPBUSD.
#include "engine/backend/cpu/kernels/tile_gemm_ymm.h"

namespace inferscope::simd {

TileGemmFn avxvnni_tile_gemm_kernel(GgmlType weight_type) {
    return cpu_supports(CpuIsa::AvxVnni) ? ymm_tile_gemm_kernel(weight_type) : nullptr;
}

}  // namespace inferscope::simd
