// The 256-bit row dot products and encoders (row_dot_ymm.h) compiled with AVX2 flags.
#include "engine/backend/cpu/kernels/row_dot_ymm.h"

namespace inferscope::simd {

RowDotKernels avx2_row_dot_kernels(GgmlType weight_type) { return ymm_row_dot_kernels(weight_type); }

}  // namespace inferscope::simd
