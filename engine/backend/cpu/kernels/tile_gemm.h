#pragma once
// Tiled products of several activation rows with a range of weight rows (prefill and
// batched decode): each weight block is loaded once for a tile of activation rows, which is
// what turns the memory-bound matrix-vector product into a compute-bound one.
//
//   c[i * ldc + r] = dot(weight row r, activation row i)   for i in [0, n), r in [row_begin, row_end)
//
// Activation rows are encoded in vec_dot_type(weight type) (engine/formats/quant.h), so the
// result is the same quantity the row dot products compute, up to summation order.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/formats/ggml_type.h"

namespace inferscope {

struct TileGemmArgs {
    int64_t k = 0;                          // elements per row (a multiple of the block size)
    const uint8_t* weights = nullptr;       // row 0 of the weight matrix
    uint64_t weight_row_bytes = 0;
    int64_t row_begin = 0;
    int64_t row_end = 0;
    const uint8_t* activations = nullptr;   // row 0 of the encoded activations
    uint64_t activation_row_bytes = 0;
    int64_t n = 0;                          // activation rows
    float* c = nullptr;                     // output, row i at c + i * ldc, column r
    int64_t ldc = 0;
};

using TileGemmFn = void (*)(const TileGemmArgs& args);

// The tiled kernel for `weight_type` on `isa` or the nearest family below it that has one;
// nullptr when none has (the caller then loops over row dot products).
TileGemmFn tile_gemm_kernel(GgmlType weight_type, CpuIsa isa);
// The family's own kernel (nullptr: it has none, or this build lacks the family).
TileGemmFn tile_gemm_family_kernel(GgmlType weight_type, CpuIsa isa);

namespace simd {
TileGemmFn avx2_tile_gemm_kernel(GgmlType weight_type);
TileGemmFn avxvnni_tile_gemm_kernel(GgmlType weight_type);
TileGemmFn avx512_tile_gemm_kernel(GgmlType weight_type);
}  // namespace simd

}  // namespace inferscope
