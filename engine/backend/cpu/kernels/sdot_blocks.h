#pragma once
// Q8_0 and Q4_0 row dot products through sdot (ARMv8.2 dot product), shared by the files
// compiled with +dotprod and +i8mm; in an anonymous namespace, as neon_blocks.h, so each file
// keeps its own copy.
#include "engine/backend/cpu/kernels/neon_blocks.h"

namespace inferscope::simd {
namespace {

inline int32_t dot_32_sdot(const int8x16x2_t& a, const int8x16x2_t& b) {
    int32x4_t acc = vdotq_s32(vdupq_n_s32(0), a.val[0], b.val[0]);
    acc = vdotq_s32(acc, a.val[1], b.val[1]);
    return vaddvq_s32(acc);
}

// Each block's integer sum scaled as the reference scales it: Q8_0 sumi x (dw x dx), Q4_0
// (sumi x dw) x dx.
float sdot_q8_0(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ8_0, x += layouts::kQ8_0) {
        const int32_t sumi = dot_32_sdot(load_q8_0(w), load_q8_0(x));
        sum += static_cast<float>(sumi) * (block_scale(w) * block_scale(x));
    }
    return sum;
}

float sdot_q4_0(int64_t n, const uint8_t* w, const uint8_t* x) {
    float sum = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b, w += layouts::kQ4_0, x += layouts::kQ8_0) {
        const int32_t sumi = dot_32_sdot(unpack_q4_0(w), load_q8_0(x));
        sum += static_cast<float>(sumi) * block_scale(w) * block_scale(x);
    }
    return sum;
}

}  // namespace
}  // namespace inferscope::simd
