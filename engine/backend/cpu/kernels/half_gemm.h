#pragma once
// F16/BF16 weights times a few activation rows (batched decode, up to kHalfGemmMaxRows),
// with the activations already rounded to the weight's half type and widened to F32.
// Against the tiled kernel (tile_gemm.h) nothing is transposed: that kernel repacks each
// weight panel (a 16 x 16 transpose per 256 elements), which a small batch cannot amortize.
//   - Up to 15 rows ("narrow"): 16 consecutive elements of a weight row are widened once per
//     group of up to 8 activation rows and multiplied lane by lane with each of them; each
//     sum is finished horizontally at the end of the row.
//   - 16 to 64 rows ("wide"): a vector holds G elements of 16 / G activation rows (the
//     interleaved layout below); a chunk of each weight row is widened into a small buffer
//     and each G elements are broadcast against those vectors; each output adds its G
//     lanes once, at the end.
// Both read each weight row as one sequential stream.
//
//   c[i * ldc + r] = sum_l w[r][l] * x[i * k + l]   for i in [0, n), r in [row_begin, row_end)
//
// Products of two halves are exact in F32; only the summation order differs from vec_dot.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/formats/ggml_type.h"

namespace inferscope {

inline constexpr int64_t kHalfGemmMaxRows = 64;
inline constexpr int64_t kHalfGemmWideFrom = 16;  // from this many rows the wide path runs

// The wide path's activation layout. A vector holds G consecutive elements of 16 / G rows
// (G = half_gemm_wide_layout(n).lane_group: 1 or 2): rows in groups of R = 16 / G, each group
// stored element-group-major, with E = ceil(k / G) element groups per row,
//   xt[((g * E) + e) * 16 + s * G + q] = x[(R g + s) * k + G e + q]   (0 past n rows or k),
// ceil(n / R) * E * 16 floats. With G > 1 the kernel broadcasts G weights at a time (one
// load for G elements) and adds the G lanes of each row at the end.
struct HalfGemmWideLayout {
    int lane_group;           // G: consecutive elements of a row per vector (1 or 2)
    int64_t rows_per_vector;  // R = 16 / G
    int64_t vectors;          // ceil(n / R): vectors per element group
};
HalfGemmWideLayout half_gemm_wide_layout(int64_t n);
int64_t interleaved_floats(int64_t n, int64_t k);
// Writes elements l in [l_begin, l_end) of every row (and the zero padding past k when
// l_end == k), so that threads can fill disjoint element ranges.
void interleave_rows(const float* x, int64_t n, int64_t k, float* xt, int64_t l_begin, int64_t l_end);

// out[i] = x[i] rounded to `type` (F16 or BF16) and widened back to F32: the values
// round_to_fp16 / round_to_bf16 (engine/core/fp16.h) give, NaN staying NaN; vectorized on
// `isa` where that family can.
void round_to_half(GgmlType type, const float* x, int64_t count, float* out, CpuIsa isa);

struct HalfGemmArgs {
    int64_t k = 0;                     // elements per row
    const uint8_t* weights = nullptr;  // row 0 of the weight matrix (F16 or BF16)
    uint64_t weight_row_bytes = 0;
    int64_t row_begin = 0;
    int64_t row_end = 0;
    const float* x = nullptr;   // [n x k] activations, each representable in the weight's type
    const float* xt = nullptr;  // the same interleaved (see above); needed when n >= kHalfGemmWideFrom
    int64_t n = 0;
    float* c = nullptr;  // output, row i at c + i * ldc, column r
    int64_t ldc = 0;
};

using HalfGemmFn = void (*)(const HalfGemmArgs& args);

// The kernel for F16 or BF16 weights on `isa`, or nullptr when the family has none.
HalfGemmFn half_gemm_kernel(GgmlType weight_type, CpuIsa isa);

namespace simd {
HalfGemmFn avx512_half_gemm_kernel(GgmlType weight_type);
void avx512_round_to_half(GgmlType type, const float* x, int64_t count, float* out);
}  // namespace simd

}  // namespace inferscope
