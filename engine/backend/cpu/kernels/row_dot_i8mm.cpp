// Batched decode with the ARMv8.6 8-bit matrix multiply (smmla: a 2x8 by 8x2 product of
// signed bytes into a 2x2 tile of 32-bit sums), compiled with +i8mm (see
// engine/CMakeLists.txt): two weight rows against two activation rows per instruction, so
// each weight block is unpacked once for a pair of sequences, for every 32-element block
// format. The integer sums are exact and are scaled as the sdot kernels scale them, so every
// output has dot_rows' bits.
#include "engine/backend/cpu/kernels/batch_rows.h"
#include "engine/backend/cpu/kernels/neon_row_dot_table.h"
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

// Two weight rows against two activation rows of the 32-element format K (LegacyRows):
// out_i[r] for i, r in {0, 1}, each block's sums scaled as K scales them.
template <class K>
void two_by_two(int64_t n, const uint8_t* w0, const uint8_t* w1, const uint8_t* x0, const uint8_t* x1, float* out0,
                float* out1) {
    float s00 = 0.0f, s01 = 0.0f, s10 = 0.0f, s11 = 0.0f;
    for (int64_t b = 0; b < n / layouts::kLegacyElements; ++b) {
        const uint8_t* wb0 = w0 + b * K::kBlockBytes;
        const uint8_t* wb1 = w1 + b * K::kBlockBytes;
        const uint8_t* xb0 = x0 + b * K::kXBytes;
        const uint8_t* xb1 = x1 + b * K::kXBytes;
        const int32x4_t sums = pair_by_pair(K::unpack(wb0), K::unpack(wb1), K::load_x(xb0), K::load_x(xb1));
        s00 += K::BlockScale::of(wb0, xb0, vgetq_lane_s32(sums, 0));
        s01 += K::BlockScale::of(wb0, xb1, vgetq_lane_s32(sums, 1));
        s10 += K::BlockScale::of(wb1, xb0, vgetq_lane_s32(sums, 2));
        s11 += K::BlockScale::of(wb1, xb1, vgetq_lane_s32(sums, 3));
    }
    out0[0] = s00;
    out0[1] = s10;
    out1[0] = s01;
    out1[1] = s11;
}

template <class K>
void rows_batch(int64_t n, const uint8_t* weights, uint64_t weight_row_bytes, int64_t n_rows, const uint8_t* activations,
                uint64_t activation_row_bytes, int n_activations, float* out, int64_t out_stride) {
    constexpr auto kDot = &dot_of_rows<K>;
    const auto weight_row = [&](int64_t r) { return weights + static_cast<uint64_t>(r) * weight_row_bytes; };
    const auto activation = [&](int i) { return activations + static_cast<uint64_t>(i) * activation_row_bytes; };
    int64_t r = 0;
    for (; r + 2 <= n_rows; r += 2) {
        int i = 0;
        for (; i + 2 <= n_activations; i += 2) {
            two_by_two<K>(n, weight_row(r), weight_row(r + 1), activation(i), activation(i + 1), out + i * out_stride + r,
                          out + (i + 1) * out_stride + r);
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

template <class K>
RowDotKernels smmla_kernels(GgmlType activation_type) {
    constexpr auto dot = &dot_of_rows<K>;
    return {activation_type, nullptr, dot, &rows_of<dot>, &rows_batch<K>};
}

}  // namespace

RowDotKernels i8mm_row_dot_kernels(GgmlType weight_type) {
    return legacy_format_kernels<&accumulate_16_sdot>(weight_type,
                                                      []<class K>(GgmlType activation) { return smmla_kernels<K>(activation); });
}

}  // namespace inferscope::simd
