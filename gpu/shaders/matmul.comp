#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for the rows r of one weight buffer and up to
// TOKENS tokens per workgroup. Decode (one token) is the matrix-vector case; a prompt
// re-reads each row once per TOKENS tokens.
//
// Built twice from this source: with USE_SUBGROUPS=1 each subgroup owns one row, its lanes
// stride over the row in chunks of 8 elements (consecutive lanes read consecutive chunks)
// and subgroupAdd sums them, with no shared memory and no barrier; with USE_SUBGROUPS=0
// (devices without subgroup arithmetic) the whole workgroup owns one row and the partial
// sums meet in shared memory.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#if USE_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;
layout(constant_id = 2) const uint ROWS_PER_GROUP = 1;  // subgroups: the workgroup size / the device's subgroup size
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

// Partial dot products of row r with the workgroup's tokens, over the chunks lane,
// lane + lanes, ...
void partial_dots(uint r, uint t0, uint n_t, uint lane, uint lanes, inout float acc[TOKENS]) {
    const uint row = r * row_words(p.cols);
    const uint n_chunks = (p.cols + 7) / 8;
    for (uint c = lane; c < n_chunks; c += lanes) {
        float v[8];
        weight_chunk(row, c, p.cols, v);
        const uint e0 = c * 8;
        const uint len = min(8u, p.cols - e0);
        for (uint t = 0; t < n_t; ++t) {
            const uint xb = (t0 + t) * p.cols + e0;
            float xs[8];
            for (uint i = 0; i < 8; ++i) xs[i] = i < len ? x[xb + i] : 0.0;
            const vec4 lo = input_for_format(WEIGHT_TYPE, vec4(xs[0], xs[1], xs[2], xs[3]));
            const vec4 hi = input_for_format(WEIGHT_TYPE, vec4(xs[4], xs[5], xs[6], xs[7]));
            acc[t] += dot(vec4(v[0], v[1], v[2], v[3]), lo) + dot(vec4(v[4], v[5], v[6], v[7]), hi);
        }
    }
}

void store(uint r, uint t0, uint t, float value) {
    const uint dst = (t0 + t) * p.y_stride + p.y_offset + r;
    y[dst] = value + (p.accumulate != 0 ? y[dst] : 0.0);
}

#if USE_SUBGROUPS
void main() {
    const uint t0 = gl_WorkGroupID.y * TOKENS;
    const uint n_t = min(TOKENS, p.n - t0);
    // A loop, not one row per subgroup: the subgroups actually launched may be fewer than
    // the host assumed (devices with a variable subgroup size).
    for (uint sub = gl_SubgroupID; sub < ROWS_PER_GROUP; sub += gl_NumSubgroups) {
        const uint r = gl_WorkGroupID.x * ROWS_PER_GROUP + sub;
        if (r >= p.rows) return;
        float acc[TOKENS];
        for (uint t = 0; t < TOKENS; ++t) acc[t] = 0.0;
        partial_dots(r, t0, n_t, gl_SubgroupInvocationID, gl_SubgroupSize, acc);
        for (uint t = 0; t < n_t; ++t) {
            const float sum = subgroupAdd(acc[t]);
            if (gl_SubgroupInvocationID == 0) store(r, t0, t, sum);
        }
    }
}
#else
shared float partial[TOKENS][MAX_THREADS];

void main() {
    const uint r = gl_WorkGroupID.x;
    const uint t0 = gl_WorkGroupID.y * TOKENS;
    const uint tid = gl_LocalInvocationID.x;
    const uint threads = gl_WorkGroupSize.x;
    const uint n_t = min(TOKENS, p.n - t0);
    float acc[TOKENS];
    for (uint t = 0; t < TOKENS; ++t) acc[t] = 0.0;
    partial_dots(r, t0, n_t, tid, threads, acc);
    for (uint t = 0; t < n_t; ++t) partial[t][tid] = acc[t];
    barrier();
    for (uint stride = threads / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            for (uint t = 0; t < n_t; ++t) partial[t][tid] += partial[t][tid + stride];
        }
        barrier();
    }
    if (tid < n_t) store(r, t0, tid, partial[tid][0]);
}
#endif
