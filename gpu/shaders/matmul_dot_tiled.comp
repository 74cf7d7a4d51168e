#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for prompts and batches of quantized weights, with the
// input encoded as the CPU encodes it for them (Q8_0, Q8_1 or Q8_K), once for every tile by
// encode_input.comp, and the CPU's block arithmetic: exact integer sums of code products, four bytes per instruction
// (integer dot products), then each 32-value group's scales (group_product), added group by
// group in the CPU's order. Each workgroup computes a tile of 64 weight rows x 64 tokens, walking
// the shared dimension one group at a time: both operands' codes are staged in shared memory,
// word-major, and each of the 128 threads computes 8 rows x 4 tokens from them, reading a step's
// words of its rows and tokens in three loads. Each row (token) is loaded in 4 parts by threads
// 64 apart, so that a subgroup stores consecutive rows, in as many banks.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_spirv_intrinsics : require

const uint THREADS = 128;
layout(local_size_x = THREADS) in;
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;
const uint TILE_ROWS = 64;
const uint TILE_TOKENS = 64;
const uint GROUP = 32;
const uint GROUP_WORDS = GROUP / 4;
const uint PARTS = GROUP / 8;                    // a row's (token's) loading parts of 8 codes
const uint SLOTS = PARTS * TILE_ROWS / THREADS;  // the parts each thread loads
const uint SLOT_STRIDE = THREADS / TILE_ROWS;    // between one thread's parts

layout(set = 0, binding = 0) readonly buffer Weights { uint16_t w[]; };
layout(set = 0, binding = 1) readonly buffer Encoded { uint encoded[]; };  // the input rows, by encode_input.comp
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
#include "q8_encoding.glsl"
#include "integer_dot.glsl"
#include "encoded_input.glsl"

// The step's group: per weight row its codes and scales (weight_group_scales); per token its
// codes, scale, the sums of its two halves' codes (Q8_K's minimums) and its Q8_1 code-sum scale.
shared uvec4 w_codes[GROUP_WORDS][TILE_ROWS / 4];  // [word][row / 4][row % 4]
shared vec4 w_scales[TILE_ROWS];
shared uvec4 x_codes[GROUP_WORDS][TILE_TOKENS / 4];  // [word][token / 4][token % 4]
shared float x_scale[TILE_TOKENS];
shared vec2 x_half_sums[Q8_K_INPUT ? TILE_TOKENS : 1];
shared float x_code_sum_scale[Q8_1_INPUT ? TILE_TOKENS : 1];

// The part of its row (token, tid % 64) that the thread's slot h loads.
uint loading_part(uint tid, uint h) { return tid / TILE_ROWS + SLOT_STRIDE * h; }

// Stages the thread's 2 x 8 weight codes of row r (zeros past the last row), and the group's
// scales from the row's first loading thread.
void load_weights(uint tid, uint r, uint k0) {
    const uint row = r * row_words(p.cols);
    const uint tile_row = tid % TILE_ROWS;
    for (uint h = 0; h < SLOTS; ++h) {
        const uint part = loading_part(tid, h);
        float v[8];
        if (r < p.rows) {
            weight_chunk_codes(row, k0 / 8 + part, v);
        } else {
            for (uint i = 0; i < 8; ++i) v[i] = 0.0;
        }
        w_codes[part * 2][tile_row / 4][tile_row % 4] = pack_i8x4(vec4(v[0], v[1], v[2], v[3]));
        w_codes[part * 2 + 1][tile_row / 4][tile_row % 4] = pack_i8x4(vec4(v[4], v[5], v[6], v[7]));
    }
    if (tid < TILE_ROWS) w_scales[tile_row] = r < p.rows ? weight_group_scales(row, k0 / GROUP) : vec4(0.0);
}

// Stages the thread's 2 x 8 input codes of token row t (zeros past the last token), as
// encode_input.comp encoded them; the row's first loading thread stages the group's scale and sums.
void load_input(uint tid, uint t, uint group) {
    const uint token = tid % TILE_TOKENS;
    const uint groups = p.cols / GROUP;
    const uint total = p.n * groups;
    const uint i = t * groups + group;
    for (uint h = 0; h < SLOTS; ++h) {
        const uint part = loading_part(tid, h);
        const uint at = encoded_codes_at(i) + 2 * part;
        x_codes[part * 2][token / 4][token % 4] = t < p.n ? encoded[at] : 0u;
        x_codes[part * 2 + 1][token / 4][token % 4] = t < p.n ? encoded[at + 1] : 0u;
    }
    if (tid < TILE_TOKENS) {
        x_scale[token] = t < p.n ? uintBitsToFloat(encoded[encoded_scale_at(total, i)]) : 0.0;
        if (Q8_K_INPUT) {
            const uint at = encoded_half_sums_at(total, i);
            x_half_sums[token] = t < p.n ? vec2(uintBitsToFloat(encoded[at]), uintBitsToFloat(encoded[at + 1])) : vec2(0.0);
        }
        if (Q8_1_INPUT) x_code_sum_scale[token] = t < p.n ? uintBitsToFloat(encoded[encoded_code_sum_scale_at(total, i)]) : 0.0;
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint r0 = gl_WorkGroupID.x * TILE_ROWS;
    const uint t0 = gl_WorkGroupID.y * TILE_TOKENS;
    // Computing: rows ty*8.., tokens tx*4..
    const uint ty = tid / 16;
    const uint tx = tid % 16;
    float acc[8][4];
    for (uint i = 0; i < 8; ++i) {
        for (uint j = 0; j < 4; ++j) acc[i][j] = 0.0;
    }
    for (uint k0 = 0; k0 < p.cols; k0 += GROUP) {
        load_weights(tid, r0 + tid % TILE_ROWS, k0);
        load_input(tid, t0 + tid % TILE_TOKENS, k0 / GROUP);
        barrier();
        ivec2 s[8][4];  // [row][token]: the code products of each half of the group
        for (uint i = 0; i < 8; ++i) {
            for (uint j = 0; j < 4; ++j) s[i][j] = ivec2(0);
        }
        for (uint q = 0; q < GROUP_WORDS; ++q) {
            const uvec4 a0 = w_codes[q][ty * 2];
            const uvec4 a1 = w_codes[q][ty * 2 + 1];
            const uvec4 b = x_codes[q][tx];
            for (uint j = 0; j < 4; ++j) {
                for (uint i = 0; i < 4; ++i) s[i][j][q / 4] += dot_i8x4(a0[i], b[j], 0);
                for (uint i = 0; i < 4; ++i) s[4 + i][j][q / 4] += dot_i8x4(a1[i], b[j], 0);
            }
        }
        for (uint j = 0; j < 4; ++j) {
            const uint t = tx * 4 + j;
            const float dx = x_scale[t];
            const vec2 x_sums = Q8_K_INPUT ? x_half_sums[t] : vec2(0.0);
            const float dx_sum = Q8_1_INPUT ? x_code_sum_scale[t] : 0.0;
            for (uint i = 0; i < 8; ++i) {
                precise float sum = acc[i][j] + group_product(Q8_1_INPUT, w_scales[ty * 8 + i], dx, dx_sum, vec2(s[i][j]), x_sums);
                acc[i][j] = sum;
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
