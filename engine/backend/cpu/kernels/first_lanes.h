#pragma once
// The mask of the first min(count, 16) lanes of a 16-lane AVX-512 register (count >= 0), for
// the kernels' tails. Plain integer code: any kernel file may include it whatever its
// instruction-set flags.
#include <immintrin.h>

#include <cstdint>

namespace inferscope::simd {

inline __mmask16 first_lanes(int64_t count) {
    return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1u);
}

}  // namespace inferscope::simd
