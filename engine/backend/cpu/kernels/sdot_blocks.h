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

inline float sdot_q8_0(int64_t n, const uint8_t* w, const uint8_t* x) { return q8_0_row_dot<&dot_32_sdot>(n, w, x); }
inline float sdot_q4_0(int64_t n, const uint8_t* w, const uint8_t* x) { return q4_0_row_dot<&dot_32_sdot>(n, w, x); }

}  // namespace
}  // namespace inferscope::simd
