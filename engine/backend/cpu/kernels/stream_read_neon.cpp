// NEON streaming read (ARM64; Advanced SIMD needs no extra flags).
#include <arm_neon.h>

#include "engine/backend/cpu/kernels/stream_read.h"

namespace inferscope::simd {

uint64_t neon_stream_read(const uint64_t* words, size_t count) {
    uint64x2_t acc0 = vdupq_n_u64(0), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    size_t i = 0;
    for (; i + 8 <= count; i += 8) {  // one 64-byte line per iteration, four independent sums
        acc0 = vaddq_u64(acc0, vld1q_u64(words + i));
        acc1 = vaddq_u64(acc1, vld1q_u64(words + i + 2));
        acc2 = vaddq_u64(acc2, vld1q_u64(words + i + 4));
        acc3 = vaddq_u64(acc3, vld1q_u64(words + i + 6));
    }
    uint64_t total = vaddvq_u64(vaddq_u64(vaddq_u64(acc0, acc1), vaddq_u64(acc2, acc3)));
    for (; i < count; ++i) total += words[i];
    return total;
}

}  // namespace inferscope::simd
