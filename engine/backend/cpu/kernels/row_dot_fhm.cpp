// F16 rows with the half-precision multiply-accumulate into single precision (FMLAL/FMLAL2,
// FEAT_FHM: optional from ARMv8.2, required from ARMv8.4), compiled with +fp16fml (see
// engine/CMakeLists.txt) and used by the dotprod family where the CPU has it. The product of two
// halves is exact in single precision and each FMLAL lane is one fused add, so the sums have the
// bits of the NEON F16 rows, which widen both halves to f32 first, without the widening.
#include "engine/backend/cpu/kernels/neon_float_rows.h"
#include "engine/backend/cpu/kernels/neon_row_dot_table.h"
#include "engine/backend/cpu/kernels/row_dot.h"

namespace inferscope::simd {
namespace {

inline float16x8_t load8_f16(const uint8_t* p) { return vld1q_f16(reinterpret_cast<const __fp16*>(p)); }

// 16 halves as two vectors of eight: FMLAL takes the low four lanes of each into one
// accumulator and FMLAL2 the high four into the next, so accumulator k holds elements 4k..4k+3.
struct FmlalMac16 {
    template <int B>
    static void step(float32x4_t (&acc)[B][4], const uint8_t* w, const uint8_t* x, uint64_t x_stride) {
        for (int h = 0; h < 2; ++h) {
            const float16x8_t wh = load8_f16(w + 16 * h);
            for (int b = 0; b < B; ++b) {
                const float16x8_t xh = load8_f16(x + b * x_stride + 16 * h);
                acc[b][2 * h] = vfmlalq_low_f16(acc[b][2 * h], wh, xh);
                acc[b][2 * h + 1] = vfmlalq_high_f16(acc[b][2 * h + 1], wh, xh);
            }
        }
    }
};

}  // namespace

RowDotKernels fhm_f16_row_dot_kernels() { return batch_kernels<FloatRows<2, FmlalMac16, &half_at>>(GgmlType::F16); }

}  // namespace inferscope::simd
