// Row dot products with the ARMv8.2 dot-product extension (sdot: four 8-bit products summed
// into each 32-bit lane), compiled with +dotprod (see engine/CMakeLists.txt).
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/sdot_blocks.h"

namespace inferscope::simd {

RowDotKernels dotprod_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::Q8_0: return {GgmlType::Q8_0, nullptr, &sdot_q8_0, &rows_of<&sdot_q8_0>};
        case GgmlType::Q4_0: return {GgmlType::Q8_0, nullptr, &sdot_q4_0, &rows_of<&sdot_q4_0>};
        default: return {};
    }
}

}  // namespace inferscope::simd
