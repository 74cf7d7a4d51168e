#include "engine/backend/cpu/kernels/attention_kernels.h"

#include "engine/backend/cpu/kernels/family_chain.h"
#include "engine/backend/cpu/ops.h"
#include "engine/core/fp16.h"

namespace inferscope {
namespace {

template <typename T>
float load(const T* p, int64_t i) {
    if constexpr (sizeof(T) == 2) {
        return fp16_to_fp32(p[i]);
    } else {
        return p[i];
    }
}

template <typename T>
void scalar_scores(const float* q, int n_q, int head_dim, const T* const* kt_blocks, int block_tokens, int n_ctx, float scale,
                   float* scores, int64_t scores_stride) {
    for (int t = 0; t < n_ctx; ++t) {
        const T* kt = kt_blocks[t / block_tokens] + t % block_tokens;
        for (int g = 0; g < n_q; ++g) {
            const float* qg = q + static_cast<int64_t>(g) * head_dim;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; ++d) dot += qg[d] * load(kt, static_cast<int64_t>(d) * block_tokens);
            scores[g * scores_stride + t] = dot * scale;
        }
    }
}

template <typename T>
void scalar_accumulate(const float* p, int n_q, int64_t p_stride, const T* const* v_blocks, int block_tokens, int64_t row_stride,
                       int n_ctx, int head_dim, float* out) {
    for (int t = 0; t < n_ctx; ++t) {
        const T* row = v_blocks[t / block_tokens] + (t % block_tokens) * row_stride;
        for (int g = 0; g < n_q; ++g) {
            const float weight = p[g * p_stride + t];
            float* og = out + static_cast<int64_t>(g) * head_dim;
            for (int d = 0; d < head_dim; ++d) og[d] += weight * load(row, d);
        }
    }
}

// A family's own kernels; null members (and families this build lacks) provide none.
AttentionKernels family_kernels(CpuIsa isa) {
    switch (isa) {
#if defined(__x86_64__) || defined(__i386__)
        case CpuIsa::Avx2: return simd::avx2_attention_kernels();
        case CpuIsa::Avx512: return simd::avx512_attention_kernels();
#elif defined(__aarch64__)
        case CpuIsa::Neon: return simd::neon_attention_kernels();
#endif
        default: return {};
    }
}

}  // namespace

AttentionKernels attention_kernels(CpuIsa isa) {
    if (isa == CpuIsa::Scalar) {
        AttentionKernels scalar;
        scalar.scores_f16 = &scalar_scores<uint16_t>;
        scalar.scores_f32 = &scalar_scores<float>;
        scalar.accumulate_f16 = &scalar_accumulate<uint16_t>;
        scalar.accumulate_f32 = &scalar_accumulate<float>;
        scalar.softmax = &softmax_inplace;
        return scalar;
    }
    AttentionKernels own = family_kernels(isa);
    take_missing(own, attention_kernels(runnable_family_below(isa)), &AttentionKernels::softmax, &AttentionKernels::scores_f16,
                 &AttentionKernels::scores_f32, &AttentionKernels::accumulate_f16, &AttentionKernels::accumulate_f32);
    return own;
}

}  // namespace inferscope
