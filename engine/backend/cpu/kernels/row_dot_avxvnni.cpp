// The 256-bit row dot products and encoders (row_dot_ymm.h) compiled with AVX2 + AVX-VNNI
// flags: the legacy blocks' byte products through VPDPBUSD.
#include "engine/backend/cpu/kernels/row_dot_ymm.h"

namespace inferscope::simd {

RowDotKernels avxvnni_row_dot_kernels(GgmlType weight_type) { return ymm_row_dot_kernels(weight_type); }

}  // namespace inferscope::simd
