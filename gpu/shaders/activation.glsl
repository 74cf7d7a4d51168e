// The gated FFN activations, shared by swiglu.comp and matvec.comp:
//   SiLU: g / (1 + exp(-g))                                             SwiGLU
//   GELU: f16(gelu_tanh(f16(g))) for |g| < 10, g from 10 on, 0 from -10 down   GeGLU
// GeGLU reproduces the CPU backend's F16 table (as llama.cpp's), both roundings done on the
// bits (f16.glsl).

#include "f16.glsl"

// 0.5 x (1 + tanh(y)) as the CPU evaluates it in F32: t = tanh(y) rounded to a float, then
// 1 + t. Near t = -1 (x below about -3) 1 + t keeps only the few bits of t's rounding, so t
// must round as the CPU's does: 1 - |t| = 2e / (1 + e), e = exp(-2|y|), is accurate, and
// 1 - that rounds once, to the float nearest tanh. `precise`: no contraction or
// reassociation, which would change those roundings.
float gelu_tanh(float x) {
    precise const float y = 0.79788456080286535587989211986876 * x * (1.0 + 0.044715 * x * x);
    const float e = exp(-2.0 * abs(y));
    precise const float magnitude = 1.0 - 2.0 * e / (1.0 + e);
    precise const float t = y < 0.0 ? -magnitude : magnitude;
    precise const float result = 0.5 * x * (1.0 + t);
    return result;
}

float gelu_f16(float x) {
    if (x >= 10.0) return x;
    if (x <= -10.0) return 0.0;
    return round_to_f16(gelu_tanh(round_to_f16(x)));
}

float silu(float x) { return x / (1.0 + exp(-x)); }

// act(gate) * up; gelu selects GeGLU, else SwiGLU.
float gated_activation(float gate, float up, bool gelu) { return (gelu ? gelu_f16(gate) : silu(gate)) * up; }
