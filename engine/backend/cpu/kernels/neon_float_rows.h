#pragma once
// The row loop of the float weight types (F32, F16, BF16) on ARM64, over a 16-element
// multiply-accumulate step that is the extension's choice: widen to f32 lanes and FMLA (plain
// NEON) or the half-precision FMLAL (FEAT_FHM). In an anonymous namespace, as neon_blocks.h:
// each kernel file compiles its own copy with its own flags.
#include "engine/backend/cpu/kernels/neon_super_blocks.h"

namespace inferscope::simd {
namespace {

// Rows of floats stored as `ElementBytes`-byte elements, B activation rows (row b at
// x + b * x_stride) against one weight row: Mac16::step<B> adds 16 elements' products into four
// accumulators of four lanes per activation row (accumulator k takes elements 4k..4k+3, each
// weight vector read once for all B), then the elements past the last whole 16 are added one at
// a time; every activation row's sums are those of B = 1.
template <int ElementBytes, class Mac16, float (*At)(const uint8_t*)>
struct FloatRows {
    template <int B>
    static void rows(int64_t n, const uint8_t* w, const uint8_t* x, uint64_t x_stride, float* out, int64_t out_stride) {
        float32x4_t acc[B][4];
        for (int b = 0; b < B; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = vdupq_n_f32(0);
        int64_t i = 0;
        for (; i + 16 <= n; i += 16) Mac16::template step<B>(acc, w + i * ElementBytes, x + i * ElementBytes, x_stride);
        for (int b = 0; b < B; ++b) {
            const uint8_t* xb = x + b * x_stride;
            float sum = vaddvq_f32(vaddq_f32(vaddq_f32(acc[b][0], acc[b][1]), vaddq_f32(acc[b][2], acc[b][3])));
            for (int64_t t = i; t < n; ++t) sum += At(w + t * ElementBytes) * At(xb + t * ElementBytes);
            out[b * out_stride] = sum;
        }
    }
};

}  // namespace
}  // namespace inferscope::simd
