#pragma once
// The ARMv8.2 dot product's 16-value multiply-accumulate (sdot), shared by the files compiled
// with +dotprod and +i8mm; in an anonymous namespace, as neon_blocks.h, so each file keeps its
// own copy.
#include "engine/backend/cpu/kernels/neon_blocks.h"

namespace inferscope::simd {
namespace {

inline int32x4_t accumulate_16_sdot(int32x4_t acc, int8x16_t a, int8x16_t b) { return vdotq_s32(acc, a, b); }

}  // namespace
}  // namespace inferscope::simd
