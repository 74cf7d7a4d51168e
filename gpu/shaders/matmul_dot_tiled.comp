#version 450
// y[t][y_offset + r] (+)= dot(W[r], x[t]) for prompts and batches of quantized weights, with the
// input encoded as the CPU encodes it for them (Q8_0, Q8_1 or Q8_K: q8_encoding.glsl) and the
// CPU's block arithmetic: exact integer sums of code products, four bytes per instruction
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
#include "q8_encoding.glsl"
#include "integer_dot.glsl"

// The step's group: per weight row its codes and scales (weight_group_scales); per token its
// codes, scale, the sums of its two halves' codes (Q8_K's minimums) and its Q8_1 code-sum scale.
shared uvec4 w_codes[GROUP_WORDS][TILE_ROWS / 4];  // [word][row / 4][row % 4]
shared vec4 w_scales[TILE_ROWS];
shared uvec4 x_codes[GROUP_WORDS][TILE_TOKENS / 4];  // [word][token / 4][token % 4]
shared float x_scale[TILE_TOKENS];
shared vec2 x_half_sums[Q8_K_INPUT ? TILE_TOKENS : 1];
shared float x_code_sum_scale[Q8_1_INPUT ? TILE_TOKENS : 1];
// Per loading slot (part x 64 + row): the largest |x| of its 8
// values (Q8_0, Q8_1), or its first value of largest magnitude, sign kept, of its 64 (Q8_K); then
// the sum of its 8 codes.
shared float x_max[PARTS * TILE_TOKENS];
shared float x_code_sum[Q8_K_INPUT || Q8_1_INPUT ? PARTS * TILE_TOKENS : 1];

// The part of its row (token, tid % 64) that the thread's slot h loads.
uint loading_part(uint tid, uint h) { return tid / TILE_ROWS + SLOT_STRIDE * h; }

// The Q8_K factor (q8_k_factor) of the 256-value block of token row t from k0: each of the row's
// 4 loading slots scans 64 values in order, and the first largest of the four wins.
float q8_k_block_factor(uint tid, uint t, uint k0) {
    for (uint h = 0; h < SLOTS; ++h) {
        const uint part = loading_part(tid, h);
        float max_value = 0.0, max_magnitude = 0.0;
        if (t < p.n) {
            const uint first = k0 + part * 64;
            for (uint e = first; e < first + 64 && e < p.cols; ++e) track_first_max(x[t * p.cols + e], max_value, max_magnitude);
        }
        x_max[part * TILE_TOKENS + tid % TILE_TOKENS] = max_value;
    }
    barrier();
    float max_value = 0.0, max_magnitude = 0.0;
    for (uint part = 0; part < PARTS; ++part) track_first_max(x_max[part * TILE_TOKENS + tid % TILE_TOKENS], max_value, max_magnitude);
    return q8_k_factor(max_value);
}

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

// Stages the thread's 2 x 8 input codes of token row t (zeros past the last token), encoded with
// the Q8_K block's factor and scale or, for Q8_0 and Q8_1, the group's largest magnitude gathered
// from its 4 loading slots; the row's first loading thread stores the group's scale and sums.
void load_input(uint tid, uint t, uint k0, float block_factor, float block_scale) {
    const uint token = tid % TILE_TOKENS;
    float v[SLOTS][8];
    for (uint h = 0; h < SLOTS; ++h) {
        const uint part = loading_part(tid, h);
        for (uint i = 0; i < 8; ++i) {
            const uint e = k0 + part * 8 + i;
            v[h][i] = t < p.n && e < p.cols ? x[t * p.cols + e] : 0.0;
        }
    }
    float scale, f32_scale = 0.0;  // Q8_0 and Q8_1: the scale as stored, and before its F16 rounding
    if (!Q8_K_INPUT) {
        for (uint h = 0; h < SLOTS; ++h) {
            float amax = 0.0;
            for (uint i = 0; i < 8; ++i) amax = max(amax, abs(v[h][i]));
            x_max[loading_part(tid, h) * TILE_TOKENS + token] = amax;
        }
        barrier();
        const float amax =
            max(max(x_max[token], x_max[token + TILE_TOKENS]), max(x_max[token + 2 * TILE_TOKENS], x_max[token + 3 * TILE_TOKENS]));
        const float factor = q8_code_factor(amax);
        for (uint h = 0; h < SLOTS; ++h) {
            for (uint i = 0; i < 8; ++i) v[h][i] = q8_0_code(v[h][i], factor);
        }
        f32_scale = q8_f32_scale(amax);
        scale = q8_scale(f32_scale);
    } else {
        for (uint h = 0; h < SLOTS; ++h) {
            for (uint i = 0; i < 8; ++i) v[h][i] = q8_k_code(v[h][i], block_factor);
        }
        scale = block_scale;
    }
    for (uint h = 0; h < SLOTS; ++h) {
        const uint part = loading_part(tid, h);
        x_codes[part * 2][token / 4][token % 4] = pack_i8x4(vec4(v[h][0], v[h][1], v[h][2], v[h][3]));
        x_codes[part * 2 + 1][token / 4][token % 4] = pack_i8x4(vec4(v[h][4], v[h][5], v[h][6], v[h][7]));
    }
    if (tid < TILE_TOKENS) x_scale[token] = scale;
    if (Q8_K_INPUT || Q8_1_INPUT) {
        for (uint h = 0; h < SLOTS; ++h) {
            float code_sum = 0.0;
            for (uint i = 0; i < 8; ++i) code_sum += v[h][i];
            x_code_sum[loading_part(tid, h) * TILE_TOKENS + token] = code_sum;
        }
        barrier();
        if (tid < TILE_TOKENS) {
            const vec2 halves = vec2(x_code_sum[token] + x_code_sum[token + TILE_TOKENS],
                                     x_code_sum[token + 2 * TILE_TOKENS] + x_code_sum[token + 3 * TILE_TOKENS]);
            if (Q8_K_INPUT) x_half_sums[token] = halves;
            if (Q8_1_INPUT) x_code_sum_scale[token] = q8_1_code_sum_scale(f32_scale, halves.x + halves.y);
        }
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
    // Q8_K: the factor and scale of the current 256-value block of this thread's token row.
    float block_factor = 0.0, block_scale = 0.0;
    for (uint k0 = 0; k0 < p.cols; k0 += GROUP) {
        if (Q8_K_INPUT && k0 % 256 == 0) {
            block_factor = q8_k_block_factor(tid, t0 + tid % TILE_TOKENS, k0);
            block_scale = q8_k_scale(block_factor);
        }
        load_weights(tid, r0 + tid % TILE_ROWS, k0);
        load_input(tid, t0 + tid % TILE_TOKENS, k0, block_factor, block_scale);
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
                precise float sum = acc[i][j] + group_product(w_scales[ty * 8 + i], dx, dx_sum, vec2(s[i][j]), x_sums);
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
