#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for the rows r of one weight buffer and up to
// TOKENS tokens per workgroup: each workgroup owns one weight row and TOKENS tokens, its
// threads stride over the row in chunks of 8 elements (consecutive threads read
// consecutive chunks) and the partial sums meet in shared memory. Decode (one token) is the
// matrix-vector case; a prompt re-reads each row once per TOKENS tokens.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;
const uint TOKENS = 8;
const uint MAX_THREADS = 256;

layout(set = 0, binding = 0) readonly buffer Weights { uint16_t w[]; };
layout(set = 0, binding = 1) readonly buffer Input { float x[]; };   // [n x cols]
layout(set = 0, binding = 2) buffer Output { float y[]; };          // [n x y_stride]

layout(push_constant) uniform Params {
    uint rows;
    uint cols;
    uint n;           // tokens
    uint y_stride;    // elements between output rows
    uint y_offset;    // column of this buffer's first weight row
    uint accumulate;  // 1: add to y (residual connection)
} p;

#include "weights.glsl"

shared float partial[TOKENS][MAX_THREADS];

void main() {
    const uint r = gl_WorkGroupID.x;
    const uint t0 = gl_WorkGroupID.y * TOKENS;
    const uint tid = gl_LocalInvocationID.x;
    const uint threads = gl_WorkGroupSize.x;
    const uint row = r * row_words(p.cols);
    const uint n_chunks = (p.cols + 7) / 8;
    const uint n_t = min(TOKENS, p.n - t0);

    float acc[TOKENS];
    for (uint t = 0; t < TOKENS; ++t) acc[t] = 0.0;
    for (uint c = tid; c < n_chunks; c += threads) {
        float v[8];
        weight_chunk(row, c, p.cols, v);
        const uint e0 = c * 8;
        const uint len = min(8u, p.cols - e0);
        for (uint t = 0; t < n_t; ++t) {
            const uint xb = (t0 + t) * p.cols + e0;
            float s = 0.0;
            for (uint i = 0; i < len; ++i) s += v[i] * x[xb + i];
            acc[t] += s;
        }
    }
    for (uint t = 0; t < TOKENS; ++t) partial[t][tid] = acc[t];
    barrier();
    for (uint stride = threads / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            for (uint t = 0; t < TOKENS; ++t) partial[t][tid] += partial[t][tid + stride];
        }
        barrier();
    }
    if (tid < n_t) {
        const uint dst = (t0 + tid) * p.y_stride + p.y_offset + r;
        y[dst] = partial[tid][0] + (p.accumulate != 0 ? y[dst] : 0.0);
    }
}
