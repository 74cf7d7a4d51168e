// NEON row dot products (ARM64; Advanced SIMD needs no extra flags): F32, F16 and BF16 rows in
// float lanes, every integer block format through widening 8-bit multiplies.
#include <bit>

#include "engine/backend/cpu/kernels/neon_row_dot_table.h"

namespace inferscope::simd {
namespace {

inline float32x4_t load4_f32(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }
inline float32x4_t load4_f16(const uint8_t* p) { return vcvt_f32_f16(vld1_f16(reinterpret_cast<const __fp16*>(p))); }
// bf16 is the top half of an f32: widening it is a 16-bit shift.
inline float32x4_t load4_bf16(const uint8_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
}

inline float bf16_at(const uint8_t* p) {
    uint16_t bits;
    std::memcpy(&bits, p, sizeof(bits));
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// A row of floats stored as `ElementBytes`-byte elements: four accumulators of four lanes,
// then the elements past the last whole 16 one at a time.
template <int ElementBytes, float32x4_t (*Load4)(const uint8_t*), float (*At)(const uint8_t*)>
float float_row_dot(int64_t n, const uint8_t* w, const uint8_t* x) {
    float32x4_t acc[4] = {vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0), vdupq_n_f32(0)};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int k = 0; k < 4; ++k) {
            const int64_t at = (i + 4 * k) * ElementBytes;
            acc[k] = vfmaq_f32(acc[k], Load4(w + at), Load4(x + at));
        }
    }
    float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[0], acc[1]), vaddq_f32(acc[2], acc[3])));
    for (; i < n; ++i) sum += At(w + i * ElementBytes) * At(x + i * ElementBytes);
    return sum;
}

constexpr auto kDotF32 = &float_row_dot<4, &load4_f32, &float_at>;
constexpr auto kDotF16 = &float_row_dot<2, &load4_f16, &half_at>;
constexpr auto kDotBf16 = &float_row_dot<2, &load4_bf16, &bf16_at>;

}  // namespace

RowDotKernels neon_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F32: return row_kernels<kDotF32>(GgmlType::F32);
        case GgmlType::F16: return row_kernels<kDotF16>(GgmlType::F16);
        case GgmlType::BF16: return row_kernels<kDotBf16>(GgmlType::BF16);
        default: return integer_row_dot_kernels<&accumulate_16_widening>(weight_type);
    }
}

}  // namespace inferscope::simd
