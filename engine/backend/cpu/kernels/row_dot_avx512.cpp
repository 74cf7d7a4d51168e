// The AVX-512 row dot family (row_dot.h): its table, avx512_row_dot_kernels. The kernels are
// in row_dot_half_avx512.cpp, row_dot_legacy_avx512.cpp, row_dot_kquant_avx512.cpp and
// row_dot_encoders_avx512.cpp, what they share in row_dot_avx512.h. Compiled with AVX-512
// flags (see engine/CMakeLists.txt).
//
// The family needs AVX512-VNNI on top of F/BW/VL (vpdpbusd, vpdpwssd); on a CPU without it
// (Skylake-X) the table provides nothing and the AVX2 kernels are used. The BF16
// instructions are not used: vdpbf16ps treats denormal inputs as zero, whereas the kernels
// here compute "products of the bf16 values (exact in float), summed in float".
//
// Semantics as in row_dot_ymm.h: encoders bit-identical to quantize_row (with the same
// scalar replicas for non-finite blocks), dot products with exact integer block sums and the
// reference's float steps, accumulated in vector lanes with fused multiply-adds.
//
// Integer products use vpdpbusd (unsigned x signed bytes, four products summed into int32
// without saturation) with the weight quant kept unsigned and the offset subtracted as
// offset*sum(x): Q8_0 weights are biased by 128 (w ^ 0x80 = w + 128), Q4_0 by 8, Q5_0 by 16.
// This is exact for every int8 activation, -128 included. K-quants multiply unsigned quants
// by activations with vpmaddubsw (pairs, far from int16 saturation) and apply the int16
// sub-block scales with vpdpwssd; offsets (Q3_K, Q6_K) and mins (Q2_K, Q4_K, Q5_K) go
// through the activation's bsums as in the reference.
//
// Register layouts: Q4_0/Q4_1 four blocks per 512-bit register (128-bit lane L = 16 quants
// of block L), eight blocks per iteration; Q8_0/Q5_0/Q5_1 two blocks per register, four per
// iteration; K-quants a 64-element run per register. Scales are computed four blocks at a
// time from the f16 fields and spread over the lanes with one permute.

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/row_dot_avx512.h"

namespace inferscope::simd {

RowDotKernels avx512_row_dot_kernels(GgmlType weight_type, PrefetchLevel prefetch) {
    if (!cpu_features().avx512vnni) return {};  // this family is AVX-512 F/BW/VL + VNNI
    RowDotKernels kernels;
    switch (weight_type) {
        case GgmlType::F16:
        case GgmlType::BF16: kernels = avx512_half_row_dots(weight_type); break;
        case GgmlType::Q8_0:
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::IQ4_NL: kernels = avx512_legacy_row_dots(weight_type, prefetch); break;
        case GgmlType::Q2_K:
        case GgmlType::Q3_K:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K:
        case GgmlType::Q6_K:
        case GgmlType::IQ4_XS: kernels = avx512_kquant_row_dots(weight_type, prefetch); break;
        default: return {};
    }
    kernels.encode = avx512_row_encoder(kernels.activation_type);
    return kernels;
}

}  // namespace inferscope::simd
