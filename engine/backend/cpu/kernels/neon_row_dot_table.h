#pragma once
// The ARM64 row kernels of every integer block format over one 16-value multiply-accumulate,
// so that the NEON and sdot families share each format's decoding and loop. In an anonymous
// namespace, as neon_blocks.h, so each kernel file keeps its own copy.
#include "engine/backend/cpu/kernels/neon_super_blocks.h"
#include "engine/backend/cpu/kernels/row_dot.h"

namespace inferscope::simd {
namespace {

template <float (*Dot)(int64_t, const uint8_t*, const uint8_t*)>
RowDotKernels row_kernels(GgmlType activation_type) {
    return {activation_type, nullptr, Dot, &rows_of<Dot>};
}

// The table of the integer formats for `weight_type` (empty for the float types).
template <Accumulate16 Acc16>
RowDotKernels integer_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::Q8_0: return row_kernels<&q8_0_row_dot<Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q4_0: return row_kernels<&q4_0_row_dot<Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q4_1: return row_kernels<&offset_row_dot<layouts::kQ4_1, &unpack_q4_1, Acc16>>(GgmlType::Q8_1);
        case GgmlType::Q5_0: return row_kernels<&symmetric_row_dot<layouts::kQ5_0, &unpack_q5_0, Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q5_1: return row_kernels<&offset_row_dot<layouts::kQ5_1, &unpack_q5_1, Acc16>>(GgmlType::Q8_1);
        case GgmlType::IQ4_NL: return row_kernels<&symmetric_row_dot<layouts::kIQ4_NL, &unpack_iq4_nl, Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q2_K: return row_kernels<&super_block_row_dot<Q2K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q3_K: return row_kernels<&super_block_row_dot<Q3K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q4_K: return row_kernels<&super_block_row_dot<Q4K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q5_K: return row_kernels<&super_block_row_dot<Q5K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q6_K: return row_kernels<&super_block_row_dot<Q6K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::IQ4_XS: return row_kernels<&super_block_row_dot<IQ4XS, Acc16>>(GgmlType::Q8_K);
        default: return {};
    }
}

}  // namespace
}  // namespace inferscope::simd
