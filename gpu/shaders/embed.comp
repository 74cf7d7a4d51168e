#version 450
// Embedding gather: out[t] = dequantized row tokens[t] of the table, times `scale` (Gemma
// scales its embeddings by sqrt(n_embd)), for the tokens whose ids fall in the rows
// [row_begin, row_begin + rows) held by this weight buffer.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 64) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;

layout(set = 0, binding = 0) readonly buffer Weights { uint16_t w[]; };
layout(set = 0, binding = 1) readonly buffer Tokens { int tokens[]; };  // [n]
layout(set = 0, binding = 2) writeonly buffer Output { float y[]; };    // [n x cols]

layout(push_constant) uniform Params {
    uint cols;
    uint n;
    uint row_begin;
    uint rows;
    float scale;
} p;

#include "weights.glsl"

void main() {
    const uint e = gl_GlobalInvocationID.x;
    const uint t = gl_GlobalInvocationID.y;
    if (e >= p.cols || t >= p.n) return;
    const uint token = uint(tokens[t]);
    if (token < p.row_begin || token >= p.row_begin + p.rows) return;
    const float value = weight_at((token - p.row_begin) * row_words(p.cols), e);
    y[t * p.cols + e] = value * p.scale;
}
