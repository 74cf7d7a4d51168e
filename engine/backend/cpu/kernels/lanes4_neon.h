#pragma once
// Rows of floats four lanes at a time for the NEON kernels: whole vectors with plain loads and
// stores, a row's last, partial vector through a small buffer. For *_neon.cpp files only.
#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace inferscope::simd {
namespace {

// fn(i, valid) for i = 0, 4, ... < n, valid = min(4, n - i).
template <typename Fn>
inline void over_lanes4(int64_t n, Fn fn) {
    const int64_t whole = n / 4 * 4;
    for (int64_t i = 0; i < whole; i += 4) fn(i, 4);
    if (whole < n) fn(whole, n - whole);
}

// The first `valid` lanes from p, the others `fill`.
inline float32x4_t load_lanes4(const float* p, int64_t valid, float fill = 0.0f) {
    if (valid >= 4) return vld1q_f32(p);
    float tail[4] = {fill, fill, fill, fill};
    std::memcpy(tail, p, static_cast<size_t>(valid) * sizeof(float));
    return vld1q_f32(tail);
}
inline float32x4_t load_lanes4(const uint16_t* p, int64_t valid) {
    if (valid >= 4) return vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(p)));
    uint16_t tail[4] = {};
    std::memcpy(tail, p, static_cast<size_t>(valid) * sizeof(uint16_t));
    return vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(tail)));
}
// Stores the first `valid` lanes only.
inline void store_lanes4(float* p, int64_t valid, float32x4_t v) {
    if (valid >= 4) {
        vst1q_f32(p, v);
        return;
    }
    float tail[4];
    vst1q_f32(tail, v);
    std::memcpy(p, tail, static_cast<size_t>(valid) * sizeof(float));
}

// A sum of floats kept in double lanes: floats of a row's range add exactly in double, so the
// order of the additions does not change it (see activation_avx512.cpp).
struct DoubleSum4 {
    float64x2_t low = vdupq_n_f64(0.0), high = vdupq_n_f64(0.0);
    void add(float32x4_t v) {
        low = vaddq_f64(low, vcvt_f64_f32(vget_low_f32(v)));
        high = vaddq_f64(high, vcvt_high_f64_f32(v));
    }
    double total() const { return vaddvq_f64(vaddq_f64(low, high)); }
};

}  // namespace
}  // namespace inferscope::simd
