// NEON row dot products (ARM64; Advanced SIMD needs no extra flags): F32 and F16 rows in
// float lanes, Q8_0 and Q4_0 blocks through widening 8-bit multiplies.
#include "engine/backend/cpu/kernels/neon_blocks.h"
#include "engine/backend/cpu/kernels/row_dot.h"

namespace inferscope::simd {
namespace {

float dot_f32(int64_t n, const uint8_t* w, const uint8_t* x) {
    const auto* a = reinterpret_cast<const float*>(w);
    const auto* b = reinterpret_cast<const float*>(x);
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; ++k) acc[k] = vfmaq_f32(acc[k], vld1q_f32(a + i + 4 * k), vld1q_f32(b + i + 4 * k));
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; ++i) sum += a[i] * b[i];
    return sum;
}

float dot_f16(int64_t n, const uint8_t* w, const uint8_t* x) {
    const auto* a = reinterpret_cast<const __fp16*>(w);
    const auto* b = reinterpret_cast<const __fp16*>(x);
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; ++k) {
            acc[k] = vfmaq_f32(acc[k], vcvt_f32_f16(vld1_f16(a + i + 4 * k)), vcvt_f32_f16(vld1_f16(b + i + 4 * k)));
        }
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; ++i) sum += static_cast<float>(a[i]) * static_cast<float>(b[i]);
    return sum;
}

float dot_q8_0(int64_t n, const uint8_t* w, const uint8_t* x) { return q8_0_row_dot<&dot_32_widening>(n, w, x); }
float dot_q4_0(int64_t n, const uint8_t* w, const uint8_t* x) { return q4_0_row_dot<&dot_32_widening>(n, w, x); }

}  // namespace

RowDotKernels neon_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32: return {GgmlType::F32, nullptr, &dot_f32, &rows_of<&dot_f32>};
        case GgmlType::F16: return {GgmlType::F16, nullptr, &dot_f16, &rows_of<&dot_f16>};
        case GgmlType::Q8_0: return {GgmlType::Q8_0, nullptr, &dot_q8_0, &rows_of<&dot_q8_0>};
        case GgmlType::Q4_0: return {GgmlType::Q8_0, nullptr, &dot_q4_0, &rows_of<&dot_q4_0>};
        default: return {};
    }
}

}  // namespace inferscope::simd
