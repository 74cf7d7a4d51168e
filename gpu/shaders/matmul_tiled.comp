#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for prompts and batches, in F32: each workgroup
// computes a tile of 64 weight rows x 64 tokens, walking the shared dimension 32 elements (one
// quantized block) at a time. Both operands' slices are staged in shared memory (the weights
// dequantized once per tile instead of once per token), k-major, so that each of the 128
// threads reads the 8 rows and 4 tokens of its 8 x 4 block of outputs at one k as three vec4
// loads. Quantized weights whose input is encoded as the CPU encodes it take
// matmul_dot_tiled.comp instead.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

const uint THREADS = 128;
layout(local_size_x = THREADS) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;
const uint TILE_ROWS = 64;
const uint TILE_TOKENS = 64;
const uint TILE_K = 32;

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

shared vec4 w_tile[TILE_K][TILE_ROWS / 4];    // [k][row / 4][row % 4]
shared vec4 x_tile[TILE_K][TILE_TOKENS / 4];  // [k][token / 4][token % 4]

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TILE_ROWS;
    const uint t0 = gl_WorkGroupID.y * TILE_TOKENS;
    const uint words = row_words(p.cols);
    // Loading: thread tid fills 8 consecutive k of row (or token) tid % 64, twice; a subgroup's
    // threads store one k of consecutive rows, in as many banks.
    const uint load_row = tid % TILE_ROWS;
    // Computing: rows ty*8.., tokens tx*4..
    const uint ty = tid / 16;
    const uint tx = tid % 16;
    float acc[8][4];
    for (uint i = 0; i < 8; ++i) {
        for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;
    }
    for (uint k0 = 0; k0 < p.cols; k0 += TILE_K) {
        for (uint load_chunk = tid / TILE_ROWS; load_chunk < TILE_K / 8; load_chunk += THREADS / TILE_ROWS) {
            float v[8];
            const uint r = r0 + load_row;
            if (r < p.rows) {
                weight_chunk(r * words, k0 / 8 + load_chunk, p.cols, v);
            } else {
                for (uint i = 0; i < 8; ++i) v[i] = 0.0;
            }
            for (uint i = 0; i < 8; ++i) w_tile[load_chunk * 8 + i][load_row / 4][load_row % 4] = v[i];
            const uint t = t0 + load_row;
            vec4 xs[2];
            for (uint i = 0; i < 8; ++i) {
                const uint e = k0 + load_chunk * 8 + i;
                xs[i / 4][i % 4] = (t < p.n && e < p.cols) ? x[t * p.cols + e] : 0.0;
            }
            for (uint half_index = 0; half_index < 2; ++half_index) xs[half_index] = input_for_format(WEIGHT_TYPE, xs[half_index]);
            for (uint i = 0; i < 8; ++i) x_tile[load_chunk * 8 + i][load_row / 4][load_row % 4] = xs[i / 4][i % 4];
        }
        barrier();
        for (uint k = 0; k < TILE_K; ++k) {
            const vec4 a0 = w_tile[k][ty * 2];
            const vec4 a1 = w_tile[k][ty * 2 + 1];
            const vec4 b = x_tile[k][tx];
            for (uint j = 0; j < 4; ++j) {
                for (uint i = 0; i < 4; ++i) acc[i][j] += a0[i] * b[j];
                for (uint i = 0; i < 4; ++i) acc[4 + i][j] += a1[i] * b[j];
            }
        }
        barrier();
    }
    for (uint i = 0; i < 8; ++i) {
        const uint r = r0 + ty * 8 + i;
        for (uint j = 0; j < 4; ++j) {
            const uint t = t0 + tx * 4 + j;
            if (r >= p.rows || t >= p.n) continue;
            const uint dst = t * p.y_stride + p.y_offset + r;
            y[dst] = acc[i][j] + (p.accumulate != 0 ? y[dst] : 0.0);
        }
    }
}
