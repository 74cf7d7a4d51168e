#pragma once
// The ARMv8.2 dot product's 16-value multiply-accumulate (sdot) and the Q8_0 and Q4_0 rows
// through it, shared by the files compiled with +dotprod and +i8mm; in an anonymous
// namespace, as neon_blocks.h, so each file keeps its own copy.
#include "engine/backend/cpu/kernels/batch_rows.h"
#include "engine/backend/cpu/kernels/neon_blocks.h"

namespace inferscope::simd {
namespace {

inline int32x4_t accumulate_16_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }

inline float sdot_q8_0(int64_t n, const uint8_t* w, const uint8_t* x) { return dot_of_rows<Q8_0Rows<&accumulate_16_sdot>>(n, w, x); }
inline float sdot_q4_0(int64_t n, const uint8_t* w, const uint8_t* x) { return dot_of_rows<Q4_0Rows<&accumulate_16_sdot>>(n, w, x); }

}  // namespace
}  // namespace inferscope::simd
