#version 450
// Matrix-vector products for 1..8 tokens (decode, small batches), one team of ROW_THREADS
// threads per output row: the team splits the row's K dimension (consecutive threads read
// consecutive 16-byte chunks or blocks), so long rows keep many loads in flight, and a
// workgroup holds several teams when rows are short. Up to three matrices of one column count
// share a dispatch (their rows concatenated: q, k, v), of one format or of block formats whose
// input one encoding serves (Q8_1 serving Q8_0's formats too); in gated mode each team computes the gate and the up row of its
// output, then act(gate) * up. An optional RMSNorm of
// the input rows runs as a prologue (each token's inverse RMS once per workgroup); a post-norm
// added to the residual (Gemma's) runs as an epilogue of one matrix's product: the workgroup
// that stores its rows last (a counter each workgroup adds itself to once its rows are
// visible) norms each token's whole product row and adds it to the residual. Built with
// QKV_PREPARE=1, a q/k/v dispatch also does qkv_prepare.comp's step: per head (head_dim
// consecutive rows of the concatenated q, k, v), the workgroup that stores its rows last adds
// the biases, norms and rotates it, and puts q back in place and k, v in the paged cache.
//
// Built three times from this source: with USE_SUBGROUPS=1 partial sums meet through
// subgroupAdd and one shared-memory step across a team's subgroups; with USE_SUBGROUPS=0 in
// shared memory; with INTEGER_DOT=1 (and subgroups) quantized weights are multiplied by the
// input encoded as the CPU encodes it for them (Q8_0 for the 32-element formats, Q8_1 for those
// with a minimum, Q8_K for the K-quants and IQ4_XS), four bytes at a time (integer dot products).
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#if USE_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#ifndef INTEGER_DOT
#define INTEGER_DOT 0
#endif
#ifndef QKV_PREPARE
#define QKV_PREPARE 0
#endif
#if INTEGER_DOT
#extension GL_EXT_spirv_intrinsics : require
#endif

layout(local_size_x_id = 0) in;  // a power of two, at most MAX_PARTS
layout(constant_id = 1) const uint WEIGHT_TYPE = 0;  // matrix 0's format, weight_layout.glsl's numbering
// Matrices 1 and 2's: WEIGHT_TYPE itself, or block formats whose input one encoding serves with
// WEIGHT_TYPE's (Q8_K: a Q4_K_M file's Q4_K q and k beside a Q6_K v; Q8_1 where any of the three
// has a minimum, serving the Q8_0 ones too: its Q5_1 q and k beside a Q8_0 v).
layout(constant_id = 4) const uint WEIGHT_TYPE_1 = 0;
layout(constant_id = 5) const uint WEIGHT_TYPE_2 = 0;
layout(constant_id = 2) const uint ROW_THREADS = 32;  // a power of two dividing the workgroup size
// Bits 0-7: the token count n (1..8); bit 8: rows and x are 16-byte aligned (cols % 8 == 0);
// bit 9: RMSNorm prologue; bit 10: gated; bits 11-13: rows per team (1..4); bit 14: the weights
// multiply the input encoded (Q8_0, Q8_1 or Q8_K) as they do in the INTEGER_DOT build;
// bit 15: post-norm epilogue (one matrix, no prologue);
// bits 16-31: the input row's 32-element groups, sizing its encoded copy (the INTEGER_DOT build)
// or its Q8_K block factors (the F32 build encoding Q8_K); with F16/BF16 weights, nonzero where
// the rounded input rows fit part[][] (HALF_INPUT_STAGED).
layout(constant_id = 3) const uint CONFIG = 1;
const uint TOKENS = CONFIG & 0xFFu;
const bool ALIGNED = (CONFIG & 0x100u) != 0;
const bool NORM = (CONFIG & 0x200u) != 0;
const bool GATED = (CONFIG & 0x400u) != 0;
const bool ENCODE_INPUT = (CONFIG & 0x4000u) != 0;
const bool POST_NORM = (CONFIG & 0x8000u) != 0;
// A team computes this many consecutive rows at once: their weight loads are independent (more
// bytes in flight per thread) and they share each load of x.
const uint TEAM_ROWS = (CONFIG >> 11) & 7u;  // the host sets 1..4
const uint PER_ROW = GATED ? 2 * TOKENS : TOKENS;  // accumulators of one row
const uint ACC = 16;  // accumulators per thread: 8 tokens, twice in gated mode
const uint MAX_PARTS = 256;

layout(set = 0, binding = 0) readonly buffer W0h { uint16_t w0h[]; };
layout(set = 0, binding = 0) readonly buffer W0v { uvec4 w0v[]; };
layout(set = 0, binding = 1) readonly buffer W1h { uint16_t w1h[]; };
layout(set = 0, binding = 1) readonly buffer W1v { uvec4 w1v[]; };
layout(set = 0, binding = 2) readonly buffer W2h { uint16_t w2h[]; };
layout(set = 0, binding = 2) readonly buffer W2v { uvec4 w2v[]; };
layout(set = 0, binding = 3) readonly buffer X1 { float x1[]; };  // [n x cols]
layout(set = 0, binding = 3) readonly buffer X4 { vec4 x4[]; };
#if QKV_PREPARE
// Each head's rows are read back in this dispatch by the workgroup that finishes it.
#define PRODUCT_BUFFER coherent buffer
#else
#define PRODUCT_BUFFER buffer
#endif
layout(set = 0, binding = 4) PRODUCT_BUFFER Y0 { float y0[]; };
layout(set = 0, binding = 5) PRODUCT_BUFFER Y1 { float y1[]; };
layout(set = 0, binding = 6) PRODUCT_BUFFER Y2 { float y2[]; };
layout(set = 0, binding = 7) readonly buffer N1 { float norm1[]; };  // [cols]; POST_NORM: the post-norm's [rows]
layout(set = 0, binding = 7) readonly buffer N4 { vec4 norm4[]; };
// POST_NORM: y0 is the product's scratch [n x rows], written and read back in this dispatch
// (coherent), and bindings 5 and 6 hold the residual and the count of workgroups done.
layout(set = 0, binding = 4) coherent buffer Projected { float projected[]; };
layout(set = 0, binding = 5) buffer Residual { float residual[]; };  // [n x rows], added to
#if QKV_PREPARE
// qkv_prepare.comp's inputs and caches, and a counter per head of workgroups done with its rows.
layout(set = 0, binding = 8) readonly buffer Bias { float bias[]; };          // [q_dim | kv_dim | kv_dim]
layout(set = 0, binding = 9) readonly buffer QkNorms { float qk_norm_w[]; };  // [head_dim (q) | head_dim (k)]
layout(set = 0, binding = 10) readonly buffer Positions { int pos[]; };        // [n]
layout(set = 0, binding = 11) readonly buffer RopeTable { vec2 cos_sin[]; };   // [positions x rope_dim/2]
layout(set = 0, binding = 12) readonly buffer Slots { int slots[]; };          // [n]
layout(set = 0, binding = 13) buffer KCache { uint16_t kc[]; };
layout(set = 0, binding = 14) buffer VCache { uint16_t vc[]; };
layout(set = 0, binding = 15) coherent buffer HeadCounters { uint finish_counters[]; };  // [heads]
#else
layout(set = 0, binding = 6) coherent buffer FinishedGroups { uint finish_counters[]; };  // [1]
#endif

layout(push_constant) uniform Params {
    uint cols;
    uint end0;  // rows [0, end0) belong to matrix 0, [end0, end1) to 1, [end1, end2) to 2
    uint end1;
    uint end2;
    uint y_stride;  // matrix 0's output: y0[t * y_stride + y_offset + r]; matrix i > 0: [n x rows_i]
    uint y_offset;
    uint flags;  // bit 0: add to y; bit 1: GeGLU (else SwiGLU)
    float eps;   // the prologue's or the post-norm's (QKV_PREPARE: also the Q/K norms')
#if QKV_PREPARE
    uint head_dim;
    uint rope_dim;
    uint prepare_flags;  // qkv_prepare.comp's flags; 8: NeoX pairs; 16: F16 cache
    uint block_tokens;
#endif
} p;

#include "activation.glsl"
#define INPUT_FOR_THREE_FORMATS
#include "weight_layout.glsl"
#include "q8_encoding.glsl"
#include "finish_counter.glsl"
#if QKV_PREPARE
#include "kv_cache_store.glsl"
#endif

shared float part[ACC][MAX_PARTS];
float inv_rms[8];
const uint X_GROUPS = CONFIG >> 16;  // per token
const bool HALF_INPUT_STAGED = !BLOCK_TYPE && WEIGHT_TYPE != WT_F32 && X_GROUPS > 0;

#if INTEGER_DOT
#include "integer_dot.glsl"
// The input rows as the CPU encodes them for these weights: per 32-element group its scale
// (Q8_0's and Q8_1's F16 one, or its Q8_K block's F32 one) and 32 int8 (4 per word), with the
// integer sums of its two 16-element halves (Q4_0's offset of 8, the K-quants' minimums).
shared uint xq[TOKENS * X_GROUPS * 8];
shared float xq_scale[TOKENS * X_GROUPS];
shared int xq_half_sum[TOKENS * X_GROUPS * 2];
shared float xq_group_max[Q8_K_INPUT ? TOKENS * X_GROUPS : 1];  // Q8_K: each group's first value of largest magnitude
shared float xq_code_sum_scale[Q8_1_INPUT ? TOKENS * X_GROUPS : 1];  // Q8_1: q8_1_code_sum_scale, for the weights' minimums
#endif

// Elements e..e+3 of token t's input row, normed when NORM; zero past the row's end.
vec4 x_at(uint t, uint e) {
    vec4 v = vec4(0.0), scale = vec4(1.0);
    if (ALIGNED) {
        v = x4[(t * p.cols + e) / 4];
        if (NORM) scale = norm4[e / 4];
    } else {
        for (uint i = 0; i < 4; ++i) {
            if (e + i < p.cols) {
                v[i] = x1[t * p.cols + e + i];
                if (NORM) scale[i] = norm1[e + i];
            }
        }
    }
    return NORM ? (v * inv_rms[t]) * scale : v;
}

// Elements e..e+31 of token t's input row (normed when NORM).
void x_group(uint t, uint e, out vec4 v[8]) {
    for (uint q = 0; q < 8; ++q) v[q] = x_at(t, e + 4 * q);
}

// HALF_INPUT_STAGED: the input rows rounded as the CPU rounds them for F16/BF16 weights
// (input_for_format), once per workgroup rather than once per row read, flat in part[][] at
// t * staged_cols() + e; part[][] is free until the products' reduction.
uint staged_cols() { return (p.cols + 7) / 8 * 8; }

void stage_half_input() {
    const uint quads = TOKENS * staged_cols() / 4;
    for (uint i = gl_LocalInvocationID.x; i < quads; i += gl_WorkGroupSize.x) {
        const uint at = 4 * i;
        const vec4 v = input_for_format(WEIGHT_TYPE, x_at(at / staged_cols(), at % staged_cols()));
        for (uint j = 0; j < 4; ++j) part[(at + j) / MAX_PARTS][(at + j) % MAX_PARTS] = v[j];
    }
    barrier();
}

// Elements e..e+3 of token t's input row as the products of F32, F16 or BF16 weights read it.
vec4 float_weights_input(uint t, uint e) {
    if (!HALF_INPUT_STAGED) return input_for_format(WEIGHT_TYPE, x_at(t, e));
    const uint at = t * staged_cols() + e;  // e % 4 == 0: the four share a row of part[][]
    return vec4(part[at / MAX_PARTS][at % MAX_PARTS], part[at / MAX_PARTS][at % MAX_PARTS + 1],
                part[at / MAX_PARTS][at % MAX_PARTS + 2], part[at / MAX_PARTS][at % MAX_PARTS + 3]);
}

// Replaces 32 values by their Q8_0 codes (q8_encoding.glsl) and returns the block's scale and,
// for Q8_1 inputs, its code-sum scale (0 otherwise).
vec2 encode_q8_0(inout vec4 v[8]) {
    float amax = 0.0;
    for (uint q = 0; q < 8; ++q) {
        const vec4 a = abs(v[q]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    const float factor = q8_code_factor(amax);
    float code_sum = 0.0;
    for (uint q = 0; q < 8; ++q) {
        for (uint i = 0; i < 4; ++i) v[q][i] = q8_0_code(v[q][i], factor);
        code_sum += dot(v[q], vec4(1.0));
    }
    const float f32_scale = q8_f32_scale(amax);
    return vec2(q8_scale(f32_scale), Q8_1_INPUT ? q8_1_code_sum_scale(f32_scale, code_sum) : 0.0);
}

// The first value of largest magnitude among the 32 in v.
float group_first_max(vec4 v[8]) {
    float max_value = 0.0, max_magnitude = 0.0;
    for (uint q = 0; q < 8; ++q) {
        for (uint i = 0; i < 4; ++i) track_first_max(v[q][i], max_value, max_magnitude);
    }
    return max_value;
}

// The Q8_K factor (q8_k_factor) of token t's 256-element input block `block`.
float q8_k_block_factor(uint t, uint block) {
    float max_value = 0.0, max_magnitude = 0.0;
    for (uint g = 0; g < 8; ++g) {
        vec4 v[8];
        x_group(t, block * 256 + g * 32, v);
        track_first_max(group_first_max(v), max_value, max_magnitude);
    }
    return q8_k_factor(max_value);
}

// Replaces 32 values of a Q8_K block by their codes.
void encode_q8_k(inout vec4 v[8], float factor) {
    for (uint q = 0; q < 8; ++q) {
        for (uint i = 0; i < 4; ++i) v[q][i] = q8_k_code(v[q][i], factor);
    }
}

// group_product (q8_encoding.glsl) of a weight group of integer codes with an encoded input group.
float group_code_products(bool with_min, vec4 scales, float dx, float dx_sum, vec4 codes[8], vec4 x_codes[8]) {
    vec2 s = vec2(0.0), x_sums = vec2(0.0);
    for (uint q = 0; q < 4; ++q) {
        s += vec2(dot(codes[q], x_codes[q]), dot(codes[4 + q], x_codes[4 + q]));
        x_sums += vec2(dot(x_codes[q], vec4(1.0)), dot(x_codes[4 + q], vec4(1.0)));
    }
    return group_product(with_min, scales, dx, dx_sum, s, x_sums);
}

// acc[base + t] += the products of weight group u (its integer codes and its scales, as
// group_code_products takes them) with token t's input group u encoded as it is read: the F32
// builds' way to the CPU's arithmetic (ENCODE_INPUT). The codes are small integers, so the sums
// are exact.
void add_encoded_products(uint t, uint u, bool with_min, vec4 scales, vec4 codes[8], uint base, inout float acc[ACC]) {
    vec4 x[8];
    x_group(t, u * 32, x);
    vec2 dx;  // the scale and code-sum scale
    if (Q8_K_INPUT) {
        const uint block = t * (X_GROUPS / 8) + u / 8;
        encode_q8_k(x, part[(2 * block) / MAX_PARTS][(2 * block) % MAX_PARTS]);
        dx = vec2(part[(2 * block + 1) / MAX_PARTS][(2 * block + 1) % MAX_PARTS], 0.0);
    } else {
        dx = encode_q8_0(x);
    }
    precise float sum = acc[base + t] + group_code_products(with_min, scales, dx.x, dx.y, codes, x);
    acc[base + t] = sum;
}

#if INTEGER_DOT
// acc[base + t] += group_product of weight group u (its scales and its 32 codes as bytes, each
// `offset` below the byte: Q4_0's nibbles are 8 above its codes) with every token's encoded group u.
void add_code_products(uint u, bool with_min, vec4 scales, uint words[8], int offset, uint base, inout float acc[ACC]) {
    for (uint t = 0; t < TOKENS; ++t) {
        const uint g = t * X_GROUPS + u;
        ivec2 s = ivec2(0);
        for (uint q = 0; q < 4; ++q) s += ivec2(dot_i8x4(words[q], xq[g * 8 + q], 0), dot_i8x4(words[4 + q], xq[g * 8 + 4 + q], 0));
        const ivec2 x_sums = ivec2(xq_half_sum[2 * g], xq_half_sum[2 * g + 1]);
        const float dx_sum = Q8_1_INPUT ? xq_code_sum_scale[g] : 0.0;
        precise float sum = acc[base + t] + group_product(with_min, scales, xq_scale[g], dx_sum, vec2(s + offset * x_sums), vec2(x_sums));
        acc[base + t] = sum;
    }
}
#endif

#define W16 w0h
#define W4 w0v
#define UNIT unit0
#define OCTET octet0
#define UNIT_TYPE WEIGHT_TYPE
#include "matvec_unit.glsl"
#undef W16
#undef W4
#undef UNIT
#undef OCTET
#undef UNIT_TYPE
#define W16 w1h
#define W4 w1v
#define UNIT unit1
#define OCTET octet1
#define UNIT_TYPE WEIGHT_TYPE_1
#include "matvec_unit.glsl"
#undef W16
#undef W4
#undef UNIT
#undef OCTET
#undef UNIT_TYPE
#define W16 w2h
#define W4 w2v
#define UNIT unit2
#define OCTET octet2
#define UNIT_TYPE WEIGHT_TYPE_2
#include "matvec_unit.glsl"

// Whether teams of team_threads reduce through subgroupAdd: each subgroup inside one team.
bool subgroup_reduce(uint team_threads) {
#if USE_SUBGROUPS
    return gl_SubgroupSize <= team_threads && team_threads % gl_SubgroupSize == 0 && gl_NumSubgroups <= MAX_PARTS;
#else
    return false;
#endif
}

// Sums acc[0..count) over each team of team_threads threads into part[][]; read with team_total.
void reduce_partials(float acc[ACC], uint count, uint team_threads) {
    const uint tid = gl_LocalInvocationID.x;
#if USE_SUBGROUPS
    if (subgroup_reduce(team_threads)) {
        for (uint k = 0; k < count; ++k) {
            const float s = subgroupAdd(acc[k]);
            if (gl_SubgroupInvocationID == 0) part[k][gl_SubgroupID] = s;
        }
        barrier();
        return;
    }
#endif
    for (uint k = 0; k < count; ++k) part[k][tid] = acc[k];
    barrier();
    for (uint stride = team_threads / 2; stride > 0; stride /= 2) {
        if (tid % team_threads < stride) {
            for (uint k = 0; k < count; ++k) part[k][tid] += part[k][tid + stride];
        }
        barrier();
    }
}

float team_total(uint k, uint team, uint team_threads) {
#if USE_SUBGROUPS
    if (subgroup_reduce(team_threads)) {
        const uint per_team = team_threads / gl_SubgroupSize;
        float s = 0.0;
        for (uint i = 0; i < per_team; ++i) s += part[k][team * per_team + i];
        return s;
    }
#endif
    return part[k][team * team_threads];
}

// inv_rms[t] = 1 / sqrt(mean(x[t]^2) + eps), the whole workgroup reading the rows once.
void compute_inverse_rms() {
    const uint threads = gl_WorkGroupSize.x;
    float acc[ACC];
    for (uint k = 0; k < ACC; ++k) acc[k] = 0.0;
    for (uint t = 0; t < TOKENS; ++t) {
        for (uint e = gl_LocalInvocationID.x; e < p.cols; e += threads) acc[t] += x1[t * p.cols + e] * x1[t * p.cols + e];
    }
    reduce_partials(acc, TOKENS, threads);
    for (uint t = 0; t < TOKENS; ++t) inv_rms[t] = 1.0 / sqrt(team_total(t, 0, threads) / float(p.cols) + p.eps);
    barrier();  // part[][] is reused by the products' reduction
}

#if INTEGER_DOT
// Stores group i's codes and their half sums.
void store_codes(uint i, vec4 codes[8]) {
    ivec2 sums = ivec2(0);
    for (uint q = 0; q < 8; ++q) {
        const ivec4 b = ivec4(codes[q]);
        sums[q / 4] += b.x + b.y + b.z + b.w;
        xq[i * 8 + q] = pack_i8x4(codes[q]);
    }
    xq_half_sum[2 * i] = sums.x;
    xq_half_sum[2 * i + 1] = sums.y;
}

// Fills xq from x (normed when NORM), one thread per group. For Q8_K each group first finds
// its largest value; then each takes its block's factor from the block's eight (rows are whole
// 256-element blocks, so a block's groups are consecutive and of one token).
void quantize_input() {
    if (Q8_K_INPUT) {
        for (uint i = gl_LocalInvocationID.x; i < TOKENS * X_GROUPS; i += gl_WorkGroupSize.x) {
            vec4 v[8];
            x_group(i / X_GROUPS, (i % X_GROUPS) * 32, v);
            xq_group_max[i] = group_first_max(v);
        }
        barrier();
        for (uint i = gl_LocalInvocationID.x; i < TOKENS * X_GROUPS; i += gl_WorkGroupSize.x) {
            float max_value = 0.0, max_magnitude = 0.0;
            for (uint g = i & ~7u; g < (i | 7u) + 1; ++g) track_first_max(xq_group_max[g], max_value, max_magnitude);
            const float factor = q8_k_factor(max_value);
            vec4 v[8];
            x_group(i / X_GROUPS, (i % X_GROUPS) * 32, v);
            encode_q8_k(v, factor);
            xq_scale[i] = q8_k_scale(factor);
            store_codes(i, v);
        }
    } else {
        for (uint i = gl_LocalInvocationID.x; i < TOKENS * X_GROUPS; i += gl_WorkGroupSize.x) {
            vec4 v[8];
            x_group(i / X_GROUPS, (i % X_GROUPS) * 32, v);
            const vec2 scales = encode_q8_0(v);
            xq_scale[i] = scales.x;
            if (Q8_1_INPUT) xq_code_sum_scale[i] = scales.y;
            store_codes(i, v);
        }
    }
    barrier();
}
#endif

// The F32 build encoding Q8_K: the factor (q8_k_factor) and scale (q8_k_scale) of each token's
// 256-element blocks, one thread per block, kept in part[][] (flat: block i's at 2i and 2i + 1)
// until the products' reduction needs it back, so that its groups' products divide no more.
void compute_block_factors() {
    for (uint i = gl_LocalInvocationID.x; i < TOKENS * X_GROUPS / 8; i += gl_WorkGroupSize.x) {
        const float factor = q8_k_block_factor(i / (X_GROUPS / 8), i % (X_GROUPS / 8));
        part[(2 * i) / MAX_PARTS][(2 * i) % MAX_PARTS] = factor;
        part[(2 * i + 1) / MAX_PARTS][(2 * i + 1) % MAX_PARTS] = q8_k_scale(factor);
    }
    barrier();
}

void store(uint r, uint t, float value) {
    const bool add = (p.flags & 1u) != 0;
    if (POST_NORM) {
        projected[t * p.end0 + r] = value;
    } else if (r < p.end0) {
        const uint at = t * p.y_stride + p.y_offset + r;
        y0[at] = value + (add ? y0[at] : 0.0);
    } else if (r < p.end1) {
        const uint at = t * (p.end1 - p.end0) + r - p.end0;
        y1[at] = value + (add ? y1[at] : 0.0);
    } else {
        const uint at = t * (p.end2 - p.end1) + r - p.end1;
        y2[at] = value + (add ? y2[at] : 0.0);
    }
}

// Rows r0 .. r0 + TEAM_ROWS - 1 against unit u of every token: row i's sums at acc[i * PER_ROW + ...].
void team_units(uint r0, uint u, inout float acc[ACC]) {
    for (uint i = 0; i < TEAM_ROWS; ++i) {
        const uint r = r0 + i;
        const uint base = i * PER_ROW;
        if (r < p.end0) {
            unit0(r, u, base, acc);
            if (GATED) unit1(r, u, base + TOKENS, acc);
        } else if (r < p.end1) {
            unit1(r - p.end0, u, base, acc);
        } else if (r < p.end2) {
            unit2(r - p.end1, u, base, acc);
        }
    }
}

// residual[t] += rms_norm(projected[t]) * norm1 for every token, in rms_norm.comp's arithmetic
// and order (64 strided sums of squares, then halving), so that it equals the unfused post-norm.
void add_post_normed_rows() {
    const uint NORM_LANES = 64;
    const uint threads = gl_WorkGroupSize.x;
    const uint tid = gl_LocalInvocationID.x;
    for (uint t = 0; t < TOKENS; ++t) {
        for (uint lane = tid; lane < NORM_LANES; lane += threads) {
            float s = 0.0;
            for (uint e = lane; e < p.end0; e += NORM_LANES) s += projected[t * p.end0 + e] * projected[t * p.end0 + e];
            part[t][lane] = s;
        }
    }
    barrier();
    for (uint stride = NORM_LANES / 2; stride > 0; stride /= 2) {
        for (uint t = 0; t < TOKENS; ++t) {
            for (uint lane = tid; lane < stride; lane += threads) part[t][lane] += part[t][lane + stride];
        }
        barrier();
    }
    for (uint t = 0; t < TOKENS; ++t) {
        const float scale = 1.0 / sqrt(part[t][0] / float(p.end0) + p.eps);
        for (uint e = tid; e < p.end0; e += threads) {
            const float normed = (projected[t * p.end0 + e] * scale) * norm1[e];
            residual[t * p.end0 + e] = residual[t * p.end0 + e] + normed;
        }
    }
}

#if QKV_PREPARE
// Head `head` (q's heads, then k's, then v's) of every token, from the product's rows to
// attention's inputs in qkv_prepare.comp's arithmetic and order: biases, the Q/K norm (64
// strided sums of squares, then halving), RoPE; q back in place, k and v into the cache.
// Token t's head is part[t][0..head_dim), its norm's partial sums part[8 + t][0..64).
void prepare_head(uint head) {
    const uint tid = gl_LocalInvocationID.x;
    const uint threads = gl_WorkGroupSize.x;
    const uint hd = p.head_dim;
    const uint kv_dim = p.end1 - p.end0;
    const uint n_head = p.end0 / hd;
    const bool is_q = head < n_head;
    const bool is_k = !is_q && head * hd < p.end1;
    const uint first_row = head * hd;  // of the concatenated rows, and of the biases
    const uint kv_row = is_q ? 0 : (first_row - p.end0) % kv_dim;
    for (uint i = tid; i < TOKENS * hd; i += threads) {
        const uint t = i / hd, d = i % hd;
        const uint kv_at = t * kv_dim + kv_row + d;
        float x = is_q ? y0[t * p.y_stride + first_row + d] : (is_k ? y1[kv_at] : y2[kv_at]);
        if ((p.prepare_flags & 1u) != 0) x += bias[first_row + d];
        part[t][d] = x;
    }
    barrier();
    if (is_q ? (p.prepare_flags & 2u) != 0 : is_k && (p.prepare_flags & 4u) != 0) {  // uniform per workgroup
        const uint LANES = 64;
        for (uint i = tid; i < TOKENS * LANES; i += threads) {
            const uint t = i / LANES, lane = i % LANES;
            float sum_sq = 0.0;
            for (uint d = lane; d < hd; d += LANES) sum_sq += part[t][d] * part[t][d];
            part[8 + t][lane] = sum_sq;
        }
        barrier();
        for (uint stride = LANES / 2; stride > 0; stride /= 2) {
            for (uint i = tid; i < TOKENS * stride; i += threads) {
                part[8 + i / stride][i % stride] += part[8 + i / stride][i % stride + stride];
            }
            barrier();
        }
        for (uint i = tid; i < TOKENS * hd; i += threads) {
            const uint t = i / hd, d = i % hd;
            const float scale = 1.0 / sqrt(part[8 + t][0] / float(hd) + p.eps);
            part[t][d] = (part[t][d] * scale) * qk_norm_w[(is_q ? 0 : hd) + d];
        }
        barrier();
    }
    if (is_q || is_k) {
        const uint half_dim = p.rope_dim / 2;
        for (uint i = tid; i < TOKENS * half_dim; i += threads) {
            const uint t = i / half_dim;
            const uvec2 pair = rope_pair(i % half_dim, half_dim, (p.prepare_flags & 8u) != 0);
            const vec2 rotated = rotate_pair(part[t][pair.x], part[t][pair.y], cos_sin[uint(pos[t]) * half_dim + i % half_dim]);
            part[t][pair.x] = rotated.x;
            part[t][pair.y] = rotated.y;
        }
        barrier();
    }
    for (uint i = tid; i < TOKENS * hd; i += threads) {
        const uint t = i / hd, d = i % hd;
        if (is_q) {
            y0[t * p.y_stride + first_row + d] = part[t][d];
        } else {
            store_kv(uint(slots[t]), kv_row + d, kv_dim, p.block_tokens, part[t][d], is_k, (p.prepare_flags & 16u) != 0);
        }
    }
}

// Prepares each head whose rows this workgroup (rows first_row.. , group_rows of them) was
// the last to store.
void prepare_finished_heads(uint first_row, uint group_rows) {
    const uint hd = p.head_dim;
    const uint last_row = min(first_row + group_rows, p.end2) - 1;
    for (uint head = first_row / hd; head <= last_row / hd; ++head) {
        const uint groups_on_head = ((head + 1) * hd - 1) / group_rows - (head * hd) / group_rows + 1;
        if (finished_last(head, groups_on_head)) prepare_head(head);
    }
}
#endif

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint team = tid / ROW_THREADS;
    const uint lane = tid % ROW_THREADS;
    const uint group = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint group_rows = (gl_WorkGroupSize.x / ROW_THREADS) * TEAM_ROWS;
    const uint first_row = group * group_rows;
    if (first_row >= p.end2) return;  // past the end of a launch folded into Y
    if (NORM) compute_inverse_rms();
#if INTEGER_DOT
    quantize_input();
#endif
    if (ENCODE_INPUT && Q8_K_INPUT) compute_block_factors();
    if (HALF_INPUT_STAGED) stage_half_input();

    float acc[ACC];
    for (uint k = 0; k < ACC; ++k) acc[k] = 0.0;
    const uint units = BLOCK_TYPE ? p.cols / 32 : (p.cols + 7) / 8;
    const uint r0 = first_row + team * TEAM_ROWS;
    for (uint u = lane; u < units; u += ROW_THREADS) team_units(r0, u, acc);
    // Every thread has read its block factors or its input from part[][].
    if ((ENCODE_INPUT && Q8_K_INPUT) || HALF_INPUT_STAGED) barrier();
    reduce_partials(acc, TEAM_ROWS * PER_ROW, ROW_THREADS);
    // Output k of the team (token k % TOKENS of row k / TOKENS) is stored by lane k % ROW_THREADS.
    for (uint k = lane; k < TEAM_ROWS * TOKENS; k += ROW_THREADS) {
        const uint i = k / TOKENS;
        const uint t = k % TOKENS;
        const uint r = r0 + i;
        if (r >= p.end2) break;
        float value = team_total(i * PER_ROW + t, team, ROW_THREADS);
        if (GATED) value = gated_activation(value, team_total(i * PER_ROW + TOKENS + t, team, ROW_THREADS), (p.flags & 2u) != 0);
        store(r, t, value);
    }
    if (POST_NORM && finished_last(0, (p.end2 + group_rows - 1) / group_rows)) add_post_normed_rows();
#if QKV_PREPARE
    prepare_finished_heads(first_row, group_rows);
#endif
}
