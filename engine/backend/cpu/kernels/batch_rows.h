#pragma once
// The drivers of the batch row kernels (RowsDotBatchFn, row_dot.h), for any instruction set: a
// kernel K provides rows<B>(n, weight_row, activations, activation_row_bytes, out, out_stride),
// B activation rows against one weight row with B a compile-time count, so that their
// accumulators stay in registers. In an anonymous namespace: each kernel file instantiates its
// own kernels with its own flags.
#include <algorithm>
#include <cstdint>

#include "engine/backend/cpu/kernels/compile_time_count.h"

namespace inferscope::simd {
namespace {

// Each weight row against the activation rows Max at a time (the row is still in L1 for the
// groups after the first): group(b, r, i0) runs activation rows [i0, i0 + b) against weight
// row r.
template <int Max, class Group>
inline void batch_rows(int64_t n_rows, int n_x, const Group& group) {
    for (int64_t r = 0; r < n_rows; ++r) {
        for (int i0 = 0; i0 < n_x; i0 += Max) {
            with_compile_time_count<Max>(std::min(Max, n_x - i0), [&](auto b) { group(b, r, i0); });
        }
    }
}

// See RowsDotBatchFn: K's rows over every weight row, Max activation rows a pass.
template <class K, int Max>
void dot_rows_batch_of(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x, uint64_t x_row_bytes,
                       int n_x, float* out, int64_t out_stride) {
    batch_rows<Max>(n_rows, n_x, [&](auto count, int64_t r, int i0) {
        K::template rows<decltype(count)::value>(n, w + static_cast<uint64_t>(r) * row_bytes, x + static_cast<uint64_t>(i0) * x_row_bytes,
                                                 x_row_bytes, out + i0 * out_stride + r, out_stride);
    });
}

// RowDotFn as K's batch of one.
template <class K>
float dot_of_rows(int64_t n, const uint8_t* w, const uint8_t* x) {
    float out = 0.0f;
    K::template rows<1>(n, w, x, 0, &out, 1);
    return out;
}

}  // namespace
}  // namespace inferscope::simd
