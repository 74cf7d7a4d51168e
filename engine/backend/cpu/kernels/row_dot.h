#pragma once
// Row dot products for matrix-vector products (decode): one weight row against one
// activation row that has been encoded in the weight type's dot encoding
// (vec_dot_type in engine/formats/quant.h), so that every instruction-set family computes
// the same quantity as the scalar reference and llama.cpp, up to float summation order.
#include <cstdint>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/formats/ggml_type.h"

namespace inferscope {

using RowDotFn = float (*)(int64_t n, const uint8_t* weight_row, const uint8_t* activation_row);
// out[r] = dot(n, weights + r * weight_row_bytes, activation_row) for r in [0, n_rows): the
// rows of a range of a weight matrix against one activation row. The SIMD families process
// several rows per pass over the activation (sharing its loads, unpacking and the final
// reductions) and prefetch the weights ahead, across row ends (the rows are contiguous).
// Each out[r] equals dot(...) up to float summation order.
using RowsDotFn = void (*)(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows,
                           const uint8_t* activation_row, float* out);
// Batched decode: out[i * out_stride + r] = dot(n, weights + r * weight_row_bytes,
// activations + i * activation_row_bytes) for i in [0, n_activations), r in [0, n_rows), each
// with the bits dot_rows gives for activation row i over the same range; each weight row is
// unpacked once for several activation rows.
using RowsDotBatchFn = void (*)(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows,
                                const uint8_t* activations, uint64_t activation_row_bytes, int n_activations, float* out,
                                int64_t out_stride);
// Encodes n floats (a multiple of the encoding's block size); bit-identical to
// quantize_row(activation_type, ...).
using EncodeRowFn = void (*)(const float* x, uint8_t* dst, int64_t n);

struct RowDotKernels {
    GgmlType activation_type = GgmlType::F32;  // = vec_dot_type(weight type)
    EncodeRowFn encode = nullptr;
    RowDotFn dot = nullptr;
    RowsDotFn dot_rows = nullptr;  // provided by a family whenever it provides `dot`
    RowsDotBatchFn dot_rows_batch = nullptr;  // where the family has one (else dot_rows per activation row)
};

// The kernels for `weight_type` on `isa`; any function an ISA does not provide comes from
// the next family below it, down to the scalar reference. Throws UnsupportedError for types
// without a dot product.
RowDotKernels row_dot_kernels(GgmlType weight_type, CpuIsa isa);
// The family's own table (null members: not provided; empty for families this build lacks
// and for Scalar, whose table row_dot_kernels gives).
RowDotKernels row_dot_family_kernels(GgmlType weight_type, CpuIsa isa);

namespace simd {
// Per-family tables, defined in row_dot_<isa>.cpp: null members are "not provided".
RowDotKernels avx2_row_dot_kernels(GgmlType weight_type);
RowDotKernels avxvnni_row_dot_kernels(GgmlType weight_type);
// `prefetch`: see active_prefetch_level (the kernels compute the same either way).
RowDotKernels avx512_row_dot_kernels(GgmlType weight_type, PrefetchLevel prefetch);
RowDotKernels neon_row_dot_kernels(GgmlType weight_type);
// `fp16_fml`: the CPU has FEAT_FHM, with which the F16 rows are fhm_f16_row_dot_kernels'.
RowDotKernels dotprod_row_dot_kernels(GgmlType weight_type, bool fp16_fml);
// F16 rows over FMLAL (row_dot_fhm.cpp): dot, dot_rows and batches, without an encoder.
RowDotKernels fhm_f16_row_dot_kernels();
RowDotKernels i8mm_row_dot_kernels(GgmlType weight_type);
}  // namespace simd

}  // namespace inferscope
