// Row dot products with the ARMv8.2 dot-product extension (sdot: four 8-bit products summed
// into each 32-bit lane), compiled with +dotprod (see engine/CMakeLists.txt): Q8_0 and Q4_0
// blocks, scaled as the reference scales them.
#include "engine/backend/cpu/kernels/neon_blocks.h"
#include "engine/backend/cpu/kernels/row_dot.h"

namespace inferscope::simd {
namespace {

int32_t dot_32_sdot(const int8x16x2_t& a, const int8x16x2_t& b) {
    int32x4_t acc = vdotq_s32(vdupq_n_s32(0), a.val[0], b.val[0]);
    acc = vdotq_s32(acc, a.val[1], b.val[1]);
    return vaddvq_s32(acc);
}

float dot_q8_0(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ8_0, x += layouts::kQ8_0) {
        const int32_t sumi = dot_32_sdot(load_q8_0(w), load_q8_0(x));
        sum += static_cast<float>(sumi) * (block_scale(w) * block_scale(x));
    }
    return sum;
}

float dot_q4_0(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ4_0, x += layouts::kQ8_0) {
        const int32_t sumi = dot_32_sdot(unpack_q4_0(w), load_q8_0(x));
        sum += static_cast<float>(sumi) * block_scale(w) * block_scale(x);
    }
    return sum;
}

}  // namespace

RowDotKernels dotprod_row_dot_kernels(GgmlType weight_type) {
    RowDotKernels k;
    switch (weight_type) {
        case GgmlType::Q8_0:
            k.dot = &dot_q8_0;
            k.dot_rows = &rows_of<&dot_q8_0>;
            break;
        case GgmlType::Q4_0:
            k.dot = &dot_q4_0;
            k.dot_rows = &rows_of<&dot_q4_0>;
            break;
        default: break;
    }
    return k;
}

}  // namespace inferscope::simd
