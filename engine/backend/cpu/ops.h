#pragma once
// Element-wise and row-wise operations of the transformer on F32 activations.
// Numerics mirror llama.cpp's CPU operators (double accumulation where ggml uses it).
#include <cstdint>

#include "engine/backend/rope.h"

namespace inferscope {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * weight[i] for one row of `n`.
void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* out);

// Rotates each of `n_heads` heads of `head_dim` in place by a token's angles (rope_angles,
// engine/backend/rope.h).
void apply_rope(float* heads, int n_heads, int head_dim, const float* cos, const float* sin, const RopeParams& rope);

// gate[i] = silu(gate[i]) * up[i]
void swiglu_inplace(float* gate, const float* up, int64_t n);

// gate[i] = gelu(gate[i]) * up[i] with the tanh approximation of GELU, evaluated as
// llama.cpp's CPU backend does (its GeGLU reads a table indexed by the F16 input):
// gelu(g) = f16(gelu_tanh(f16(g))) for |g| < 10, g for g >= 10, 0 for g <= -10.
void geglu_inplace(float* gate, const float* up, int64_t n);

void add_inplace(float* y, const float* x, int64_t n);

// Softmax of `n` scores in place; returns nothing, sums in double as ggml does.
void softmax_inplace(float* scores, int64_t n);

}  // namespace inferscope
