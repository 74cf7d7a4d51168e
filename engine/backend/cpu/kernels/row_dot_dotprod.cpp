// Row dot products with the ARMv8.2 dot-product extension (sdot: four 8-bit products summed
// into each 32-bit lane) for every integer block format, compiled with +dotprod (see engine/CMakeLists.txt).
#include "engine/backend/cpu/kernels/neon_row_dot_table.h"
#include "engine/backend/cpu/kernels/sdot_blocks.h"

namespace inferscope::simd {

RowDotKernels dotprod_row_dot_kernels(GgmlType weight_type) { return integer_row_dot_kernels<&accumulate_16_sdot>(weight_type); }

}  // namespace inferscope::simd
