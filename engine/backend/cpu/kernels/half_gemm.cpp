#include "engine/backend/cpu/kernels/half_gemm.h"

#include "engine/core/fp16.h"

namespace inferscope {

// With one element per lane, 16 rows give one vector per element and each broadcast weight
// feeds a single multiply-add, so the loads bound the loop; two elements per lane (groups of
// 8 rows) halve the broadcasts per multiply-add, which pays up to 24 rows. From 25 rows one
// element per lane is as fast.
HalfGemmWideLayout half_gemm_wide_layout(int64_t n) {
    const int g = n <= 24 ? 2 : 1;
    const int64_t rows_per_vector = 16 / g;
    return {g, rows_per_vector, (n + rows_per_vector - 1) / rows_per_vector};
}

int64_t interleaved_floats(int64_t n, int64_t k) {
    const HalfGemmWideLayout layout = half_gemm_wide_layout(n);
    return layout.vectors * ((k + layout.lane_group - 1) / layout.lane_group) * 16;
}

void interleave_rows(const float* x, int64_t n, int64_t k, float* xt, int64_t l_begin, int64_t l_end) {
    const HalfGemmWideLayout layout = half_gemm_wide_layout(n);
    const int shift = layout.lane_group == 2 ? 1 : 0;  // l / G and l % G without a division per element
    const int64_t element_groups = (k + layout.lane_group - 1) / layout.lane_group;
    const int64_t l_stop = l_end == k ? element_groups * layout.lane_group : l_end;  // the padding past k too
    for (int64_t group = 0; group < layout.vectors; ++group) {
        float* base = xt + group * element_groups * 16;
        for (int64_t l = l_begin; l < l_stop; ++l) {
            float* dst = base + (l >> shift) * 16 + (l & shift);
            for (int64_t s = 0; s < layout.rows_per_vector; ++s) {
                const int64_t i = group * layout.rows_per_vector + s;
                dst[s << shift] = i < n && l < k ? x[i * k + l] : 0.0f;
            }
        }
    }
}

void round_to_half(GgmlType type, const float* x, int64_t count, float* out, CpuIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
    if (isa == CpuIsa::Avx512 && cpu_supports(CpuIsa::Avx512)) return simd::avx512_round_to_half(type, x, count, out);
#else
    (void)isa;
#endif
    const bool half = type == GgmlType::F16;
    for (int64_t i = 0; i < count; ++i) out[i] = half ? round_to_fp16(x[i]) : round_to_bf16(x[i]);
}

HalfGemmFn half_gemm_kernel(GgmlType weight_type, CpuIsa isa) {
    if (weight_type != GgmlType::F16 && weight_type != GgmlType::BF16) return nullptr;
#if defined(__x86_64__) || defined(__i386__)
    return isa == CpuIsa::Avx512 ? simd::avx512_half_gemm_kernel(weight_type) : nullptr;
#else
    (void)isa;
    return nullptr;
#endif
}

}  // namespace inferscope
