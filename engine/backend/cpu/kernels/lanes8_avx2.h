#pragma once
// Rows of floats eight lanes at a time for the AVX2 kernels: whole vectors with plain loads
// and stores, and only a row's last, partial vector through vmaskmov (a masked store costs
// several times a plain one). For *_avx2.cpp and *_avx512.cpp files only (AVX2 instructions).
#include <immintrin.h>

#include <cstdint>

namespace inferscope::simd {

// The mask of the first min(count, 8) lanes (count >= 0; all bits of a lane set).
inline __m256i first_lanes8(int64_t count) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(count < 8 ? count : 8)), lane);
}

// fn(i, tail) for i = 0, 8, ... < n: tail is null for a whole vector, else the mask of the
// row's last, partial one.
template <typename Fn>
inline void over_lanes8(int64_t n, Fn fn) {
    const int64_t whole = n / 8 * 8;
    for (int64_t i = 0; i < whole; i += 8) fn(i, static_cast<const __m256i*>(nullptr));
    if (whole < n) {
        const __m256i tail = first_lanes8(n - whole);
        fn(whole, &tail);
    }
}

// Lanes outside `tail` load as 0 and are not stored.
inline __m256 load_lanes8(const float* p, const __m256i* tail) {
    return tail != nullptr ? _mm256_maskload_ps(p, *tail) : _mm256_loadu_ps(p);
}
inline void store_lanes8(float* p, const __m256i* tail, __m256 v) {
    if (tail != nullptr) {
        _mm256_maskstore_ps(p, *tail, v);
    } else {
        _mm256_storeu_ps(p, v);
    }
}

// A sum of floats kept in double lanes: floats of a row's range add exactly in double, so
// the order of the additions does not change it (see activation_avx512.cpp).
struct DoubleSum8 {
    __m256d low = _mm256_setzero_pd(), high = _mm256_setzero_pd();
    void add(__m256 v) {
        low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
    }
    double total() const {
        alignas(32) double partial[4];
        _mm256_store_pd(partial, _mm256_add_pd(low, high));
        return (partial[0] + partial[1]) + (partial[2] + partial[3]);
    }
};

}  // namespace inferscope::simd
