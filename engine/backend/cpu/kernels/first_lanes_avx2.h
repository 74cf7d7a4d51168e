#pragma once
// The mask of the first min(count, 8) lanes of an 8-lane AVX2 register (count >= 0; all bits
// of a lane set), for vmaskmov loads and stores at the kernels' tails. For *_avx2.cpp and
// *_avx512.cpp files only (it needs AVX2 instructions).
#include <immintrin.h>

#include <cstdint>

namespace inferscope::simd {

inline __m256i first_lanes8(int64_t count) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count < 8 ? count : 8)), lane);
}

}  // namespace inferscope::simd
