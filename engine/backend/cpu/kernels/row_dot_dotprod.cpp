// Row dot products with the ARMv8.2 dot-product extension (sdot: four 8-bit products summed
// into each 32-bit lane) for every integer block format, compiled with +dotprod (see
// engine/CMakeLists.txt); F16 rows over FMLAL where the CPU has FEAT_FHM (row_dot_fhm.cpp).
#include "engine/backend/cpu/kernels/neon_row_dot_table.h"
#include "engine/backend/cpu/kernels/sdot_blocks.h"

namespace inferscope::simd {

RowDotKernels dotprod_row_dot_kernels(GgmlType weight_type, bool fp16_fml) {
    if (weight_type == GgmlType::F16) return fp16_fml ? fhm_f16_row_dot_kernels() : RowDotKernels{};
    return integer_row_dot_kernels<&accumulate_16_sdot>(weight_type);
}

}  // namespace inferscope::simd
