// Batched decode with the ARMv8.6 8-bit matrix multiply (smmla: a 2x8 by 8x2 product of
// signed bytes into a 2x2 tile of 32-bit sums), compiled with +i8mm (see
// engine/CMakeLists.txt): two weight rows against two activation rows per instruction, so
// each weight block is unpacked once for a pair of sequences. The integer sums are exact and
// are scaled in the order the sdot kernels scale them, so every output has dot_rows' bits.
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/sdot_blocks.h"

namespace inferscope::simd {
namespace {

// The four sums [w0.x0, w0.x1, w1.x0, w1.x1] of one block's 32 values.
inline int32x4_t pair_by_pair(const int8x16x2_t& w0, const int8x16x2_t& w1, const int8x16x2_t& x0, const int8x16x2_t& x1) {
    int32x4_t acc = vdupq_n_s32(0);
    for (int half = 0; half < 2; ++half) {
        acc = vmmlaq_s32(acc, vcombine_s8(vget_low_s8(w0.val[half]), vget_low_s8(w1.val[half])),
                         vcombine_s8(vget_low_s8(x0.val[half]), vget_low_s8(x1.val[half])));
        acc = vmmlaq_s32(acc, vcombine_s8(vget_high_s8(w0.val[half]), vget_high_s8(w1.val[half])),
                         vcombine_s8(vget_high_s8(x0.val[half]), vget_high_s8(x1.val[half])));
    }
    return acc;
}

template <bool WeightsQ4_0>
int8x16x2_t weight_block(const uint8_t* block) {
    if constexpr (WeightsQ4_0) {
        return unpack_q4_0(block);
    } else {
        return load_q8_0(block);
    }
}

// Two weight rows against two activation rows: out_i[r] for i, r in {0, 1}.
template <bool WeightsQ4_0>
void two_by_two(int64_t n, const uint8_t* w0, const uint8_t* w1, const uint8_t* x0, const uint8_t* x1, float* out0,
                float* out1) {
    constexpr int64_t kWeightBlock = WeightsQ4_0 ? layouts::kQ4_0 : layouts::kQ8_0;
    float s00 = 0.0f, s01 = 0.0f, s10 = 0.0f, s11 = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b) {
        const int64_t wo = b * kWeightBlock, xo = b * layouts::kQ8_0;
        const int32x4_t sums = pair_by_pair(weight_block<WeightsQ4_0>(w0 + wo), weight_block<WeightsQ4_0>(w1 + wo),
                                            load_q8_0(x0 + xo), load_q8_0(x1 + xo));
        const float dw0 = half_at(w0 + wo), dw1 = half_at(w1 + wo);
        const float dx0 = half_at(x0 + xo), dx1 = half_at(x1 + xo);
        if constexpr (WeightsQ4_0) {
            s00 += static_cast<float>(vgetq_lane_s32(sums, 0)) * dw0 * dx0;
            s01 += static_cast<float>(vgetq_lane_s32(sums, 1)) * dw0 * dx1;
            s10 += static_cast<float>(vgetq_lane_s32(sums, 2)) * dw1 * dx0;
            s11 += static_cast<float>(vgetq_lane_s32(sums, 3)) * dw1 * dx1;
        } else {
            s00 += static_cast<float>(vgetq_lane_s32(sums, 0)) * (dw0 * dx0);
            s01 += static_cast<float>(vgetq_lane_s32(sums, 1)) * (dw0 * dx1);
            s10 += static_cast<float>(vgetq_lane_s32(sums, 2)) * (dw1 * dx0);
            s11 += static_cast<float>(vgetq_lane_s32(sums, 3)) * (dw1 * dx1);
        }
    }
    out0[0] = s00;
    out0[1] = s10;
    out1[0] = s01;
    out1[1] = s11;
}

template <bool WeightsQ4_0>
void rows_batch(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows, const uint8_t* activations,
                uint64_t activation_row_bytes, int n_activations, float* out, int64_t out_stride) {
    constexpr auto kDot = WeightsQ4_0 ? &sdot_q4_0 : &sdot_q8_0;
    const auto weight_row = [&](int64_t r) { return weights + static_cast<uint64_t>(r) * weight_row_bytes; };
    const auto activation = [&](int i) { return activations + static_cast<uint64_t>(i) * activation_row_bytes; };
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        int i = 0;
        for (; i + 2 <= n_activations; i += 2) {
            two_by_two<WeightsQ4_0>(n, weight_row(r), weight_row(r + 1), activation(i), activation(i + 1),
                                    out + i * out_stride + r, out + (i + 1) * out_stride + r);
        }
        for (; i < n_activations; ++i) {
            out[i * out_stride + r] = kDot(n, weight_row(r), activation(i));
            out[i * out_stride + r + 1] = kDot(n, weight_row(r + 1), activation(i));
        }
    }
    for (; r < n_rows; ++r) {
        for (int i = 0; i < n_activations; ++i) out[i * out_stride + r] = kDot(n, weight_row(r), activation(i));
    }
}

}  // namespace

RowDotKernels i8mm_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::Q8_0: return {GgmlType::Q8_0, nullptr, &sdot_q8_0, &rows_of<&sdot_q8_0>, &rows_batch<false>};
        case GgmlType::Q4_0: return {GgmlType::Q8_0, nullptr, &sdot_q4_0, &rows_of<&sdot_q4_0>, &rows_batch<true>};
        default: return {};
    }
}

}  // namespace inferscope::simd
