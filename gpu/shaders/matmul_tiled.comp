#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for prompts and batches: each workgroup computes
// a tile of 64 weight rows x 64 tokens, walking the shared dimension 32 elements (one
// quantized block) at a time. Both operands' slices are staged in shared memory (the
// weights dequantized once per tile instead of once per token), and each thread
// accumulates a 4 x 4 block of outputs from them.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;
// 1: each token's 32 values of a step are replaced by scale x code of the encoding the CPU gives
// the input of these weights: Q8_0 for the 32-element formats (the product exact in F32), Q8_K
// (one F32 scale per 256 values) for the K-quants and IQ4_XS, and Q8_1 for Q4_1 and Q5_1, whose
// minimums then multiply the block's code-sum scale once per tile step instead of each value.
layout(constant_id = 3) const uint ENCODE_INPUT = 0;
const uint TILE_ROWS = 64;
const uint TILE_TOKENS = 64;
const uint TILE_K = 32;
const uint PADDED_K = TILE_K + 1;  // breaks shared-memory bank conflicts of the column reads

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

#include "q8_encoding.glsl"
#include "weights.glsl"

shared float w_tile[TILE_ROWS * PADDED_K];    // [row][k]
shared float x_tile[TILE_TOKENS * PADDED_K];  // [token][k]

const bool ENCODE_Q8_K = ENCODE_INPUT != 0 && Q8_K_INPUT;
const bool ENCODE_Q8_1 = ENCODE_INPUT != 0 && Q8_1_INPUT;
// Each loading thread's largest |x| of its 8 values (Q8_0), or its first value of largest
// magnitude, sign kept, of its 64 (Q8_K).
shared float x_amax[ENCODE_INPUT != 0 ? 256 : 1];
// Q8_1: each loading thread's sum of its 8 codes; per token row of the tile its block's
// code-sum scale (q8_1_code_sum_scale), and per weight row its block's minimum.
shared float x_code_sum[ENCODE_Q8_1 ? 256 : 1];
shared float x_code_sum_scale[ENCODE_Q8_1 ? TILE_TOKENS : 1];
shared float w_min[ENCODE_Q8_1 ? TILE_ROWS : 1];

// Replaces a loading thread's 8 values of a token row by scale x code of the row's 32-value
// Q8_0 block, the block's largest magnitude gathered from its 4 loading threads. For Q8_1 the
// block's first loading thread also stores its code-sum scale.
void encode_q8_0(uint tid, inout float v[8]) {
    float amax = 0.0;
    for (uint i = 0; i < 8; ++i) amax = max(amax, abs(v[i]));
    x_amax[tid] = amax;
    barrier();
    const uint first = tid & ~3u;
    amax = max(max(x_amax[first], x_amax[first + 1]), max(x_amax[first + 2], x_amax[first + 3]));
    const float factor = q8_code_factor(amax);
    const float d = q8_scale(amax);
    float code_sum = 0.0;
    for (uint i = 0; i < 8; ++i) {
        const float code = clamp(roundEven(v[i] * factor), -128.0, 127.0);
        code_sum += code;
        v[i] = d * code;
    }
    if (ENCODE_Q8_1) {
        x_code_sum[tid] = code_sum;
        barrier();
        if (tid == first) {
            const float block_sum = x_code_sum[first] + x_code_sum[first + 1] + x_code_sum[first + 2] + x_code_sum[first + 3];
            x_code_sum_scale[tid / 4] = q8_1_code_sum_scale(amax, block_sum);
        }
    }
}

// A loading thread's 8 weights of row r (zero past the last row). For Q8_1 inputs they are scale x
// code without the block's minimum, which the block's first loading thread stores in w_min.
void load_weights(uint tid, uint r, uint k0, out float v[8]) {
    const uint c = k0 / 8 + tid % 4;
    if (r >= p.rows) {
        for (uint i = 0; i < 8; ++i) v[i] = 0.0;
        if (ENCODE_Q8_1 && tid % 4 == 0) w_min[tid / 4] = 0.0;
    } else if (ENCODE_Q8_1) {
        const uint row = r * row_words(p.cols);
        const vec4 scales = weight_octet_group_scales(row, c / 4);
        weight_octet_scaled(row, c, vec2(scales.x, 0.0), v);
        if (tid % 4 == 0) w_min[tid / 4] = scales.y;
    } else {
        weight_chunk(r * row_words(p.cols), c, p.cols, v);
    }
}

// The Q8_K factor (q8_k_factor) of the 256-value block of token row t from k0: each of the row's
// 4 loading threads scans 64 values in order, and the first largest of the four wins.
float q8_k_block_factor(uint tid, uint t, uint k0) {
    float max_value = 0.0, max_magnitude = 0.0;
    if (t < p.n) {
        const uint first = k0 + (tid % 4) * 64;
        for (uint e = first; e < first + 64 && e < p.cols; ++e) track_first_max(x[t * p.cols + e], max_value, max_magnitude);
    }
    x_amax[tid] = max_value;
    barrier();
    max_value = 0.0;
    max_magnitude = 0.0;
    for (uint i = tid & ~3u; i < (tid | 3u) + 1; ++i) track_first_max(x_amax[i], max_value, max_magnitude);
    return q8_k_factor(max_value);
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TILE_ROWS;
    const uint t0 = gl_WorkGroupID.y * TILE_TOKENS;
    // Loading: thread tid fills 8 consecutive k of row (or token) tid / 4.
    const uint load_row = tid / 4;
    const uint load_chunk = tid % 4;
    // Computing: rows ty*4.., tokens tx*4..
    const uint ty = tid / 16;
    const uint tx = tid % 16;
    float acc[4][4];
    for (uint i = 0; i < 4; ++i) {
        for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;
    }
    // Q8_K: the factor and scale of the current 256-value block of this thread's token row.
    float block_factor = 0.0, block_scale = 0.0;
    for (uint k0 = 0; k0 < p.cols; k0 += TILE_K) {
        if (ENCODE_Q8_K && k0 % 256 == 0) {
            block_factor = q8_k_block_factor(tid, t0 + load_row, k0);
            block_scale = q8_k_scale(block_factor);
        }
        float v[8];
        load_weights(tid, r0 + load_row, k0, v);
        for (uint i = 0; i < 8; ++i) w_tile[load_row * PADDED_K + load_chunk * 8 + i] = v[i];
        const uint t = t0 + load_row;
        for (uint i = 0; i < 8; ++i) {
            const uint e = k0 + load_chunk * 8 + i;
            v[i] = (t < p.n && e < p.cols) ? x[t * p.cols + e] : 0.0;
        }
        if (ENCODE_Q8_K) {
            for (uint i = 0; i < 8; ++i) v[i] = block_scale * min(roundEven(v[i] * block_factor), 127.0);
        } else if (ENCODE_INPUT != 0) {
            encode_q8_0(tid, v);
        }
        for (uint i = 0; i < 8; ++i) x_tile[load_row * PADDED_K + load_chunk * 8 + i] = v[i];
        barrier();
        for (uint k = 0; k < TILE_K; ++k) {
            float a[4];
            float b[4];
            for (uint i = 0; i < 4; ++i) a[i] = w_tile[(ty * 4 + i) * PADDED_K + k];
            for (uint j = 0; j < 4; ++j) b[j] = x_tile[(tx * 4 + j) * PADDED_K + k];
            for (uint i = 0; i < 4; ++i) {
                for (uint j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
            }
        }
        if (ENCODE_Q8_1) {  // the CPU's min x code-sum scale term of the step's block
            for (uint i = 0; i < 4; ++i) {
                for (uint j = 0; j < 4; ++j) acc[i][j] += w_min[ty * 4 + i] * x_code_sum_scale[tx * 4 + j];
            }
        }
        barrier();
    }
    for (uint i = 0; i < 4; ++i) {
        const uint r = r0 + ty * 4 + i;
        for (uint j = 0; j < 4; ++j) {
            const uint t = t0 + tx * 4 + j;
            if (r >= p.rows || t >= p.n) continue;
            const uint dst = t * p.y_stride + p.y_offset + r;
            y[dst] = acc[i][j] + (p.accumulate != 0 ? y[dst] : 0.0);
        }
    }
}
