#pragma once
// Element-wise and row-wise operations of the transformer on F32 activations.
// Numerics mirror llama.cpp's CPU operators (double accumulation where ggml uses it).
#include <cstdint>

#include "engine/model/model_config.h"

namespace inferscope {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i] for one row of `n`.
void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* out);

struct RopeParams {
    int rope_dim = 0;             // leading dimensions of each head that rotate
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;      // linear scaling of positions
    RopeStyle style = RopeStyle::Normal;
    const float* freq_factors = nullptr;  // [rope_dim / 2] divisors of each pair's angle (Llama 3), or null
};

// Rotates each of `n_heads` heads of `head_dim` in place: pair i turns by
// freq_scale * pos * base^(-2i/rope_dim) / freq_factors[i].
void apply_rope(float* heads, int n_heads, int head_dim, int32_t pos, const RopeParams& rope);

// The cosines and sines of those angles at `pos` (rope_dim / 2 of each). They are the same
// for every head and layer: a forward computes them once per token (64 calls of cos/sin
// took ~1.3 us, twice per layer).
void rope_angles(int32_t pos, const RopeParams& rope, float* cos_out, float* sin_out);
// apply_rope with the angles rope_angles gave.
void apply_rope(float* heads, int n_heads, int head_dim, const float* cos, const float* sin, const RopeParams& rope);

// gate[i] = silu(gate[i]) * up[i]
void swiglu_inplace(float* gate, const float* up, int64_t n);

void add_inplace(float* y, const float* x, int64_t n);

// Softmax of `n` scores in place; returns nothing, sums in double as ggml does.
void softmax_inplace(float* scores, int64_t n);

}  // namespace inferscope
