#pragma once
// The ARM64 row kernels of every integer block format over one 16-value multiply-accumulate,
// so that the NEON and sdot families share each format's decoding and loop. In an anonymous
// namespace, as neon_blocks.h, so each kernel file keeps its own copy.
#include "engine/backend/cpu/kernels/batch_rows.h"
#include "engine/backend/cpu/kernels/neon_super_blocks.h"
#include "engine/backend/cpu/kernels/row_dot.h"

namespace inferscope::simd {
namespace {

// Activation rows per pass of the batch kernels: their sums stay in registers beside a weight
// block's values (the super-blocks decode into memory, read once per pass).
constexpr int kNeonMaxBatch = 4;

// A kernel K with rows<B> (FloatRows, LegacyRows, SuperBlockRows): one row, rows, and batches.
template <class K>
RowDotKernels batch_kernels(GgmlType activation_type) {
    constexpr auto dot = &dot_of_rows<K>;
    return {activation_type, nullptr, dot, &rows_of<dot>, &dot_rows_batch_of<K, kNeonMaxBatch>};
}

// make.template operator()<K>(activation_type) for the 32-element format `weight_type`'s
// LegacyRows kernel K over Acc16; {} for the other types. The one list of those formats.
template <Accumulate16 Acc16, class Make>
RowDotKernels legacy_format_kernels(GgmlType weight_type, Make make) {
    switch (weight_type) {
        case GgmlType::Q8_0:
            return make.template operator()<Q8_0Rows<Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q4_0:
            return make.template operator()<Q4_0Rows<Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q4_1:
            return make.template operator()<OffsetRows<layouts::kQ4_1, &unpack_q4_1, Acc16>>(GgmlType::Q8_1);
        case GgmlType::Q5_0:
            return make.template operator()<SymmetricRows<layouts::kQ5_0, &unpack_q5_0, Acc16>>(GgmlType::Q8_0);
        case GgmlType::Q5_1:
            return make.template operator()<OffsetRows<layouts::kQ5_1, &unpack_q5_1, Acc16>>(GgmlType::Q8_1);
        case GgmlType::IQ4_NL:
            return make.template operator()<SymmetricRows<layouts::kIQ4_NL, &unpack_iq4_nl, Acc16>>(GgmlType::Q8_0);
        default:
            return {};
    }
}

// The table of the integer formats for `weight_type` (empty for the float types).
template <Accumulate16 Acc16>
RowDotKernels integer_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::Q2_K:
            return batch_kernels<SuperBlockRows<Q2K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q3_K:
            return batch_kernels<SuperBlockRows<Q3K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q4_K:
            return batch_kernels<SuperBlockRows<Q4K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q5_K:
            return batch_kernels<SuperBlockRows<Q5K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::Q6_K:
            return batch_kernels<SuperBlockRows<Q6K, Acc16>>(GgmlType::Q8_K);
        case GgmlType::IQ4_XS:
            return batch_kernels<SuperBlockRows<IQ4XS, Acc16>>(GgmlType::Q8_K);
        default:
            return legacy_format_kernels<Acc16>(weight_type,
                                                []<class K>(GgmlType activation) { return batch_kernels<K>(activation); });
    }
}

}  // namespace
}  // namespace inferscope::simd
