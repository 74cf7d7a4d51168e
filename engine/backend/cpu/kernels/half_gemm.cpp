#include "engine/backend/cpu/kernels/half_gemm.h"

#include "engine/core/fp16.h"

namespace inferscope {

void interleave_rows_by_16(const float* x, int64_t n, int64_t k, float* xt, int64_t l_begin, int64_t l_end) {
    const int64_t groups = (n + 15) / 16;
    for (int64_t g = 0; g < groups; ++g) {
        for (int64_t l = l_begin; l < l_end; ++l) {
            float* dst = xt + ((g * k) + l) * 16;
            for (int64_t lane = 0; lane < 16; ++lane) {
                const int64_t i = 16 * g + lane;
                dst[lane] = i < n ? x[i * k + l] : 0.0f;
            }
        }
    }
}

void round_to_half(GgmlType type, const float* x, int64_t count, float* out, CpuIsa isa) {
    if (isa == CpuIsa::Avx512 && cpu_supports(CpuIsa::Avx512)) return simd::avx512_round_to_half(type, x, count, out);
    const bool half = type == GgmlType::F16;
    for (int64_t i = 0; i < count; ++i) out[i] = half ? round_to_fp16(x[i]) : round_to_bf16(x[i]);
}

HalfGemmFn half_gemm_kernel(GgmlType weight_type, CpuIsa isa) {
    if (weight_type != GgmlType::F16 && weight_type != GgmlType::BF16) return nullptr;
    return isa == CpuIsa::Avx512 ? simd::avx512_half_gemm_kernel(weight_type) : nullptr;
}

}  // namespace inferscope
