#version 450
// Flash-decoding attention over the paged KV cache: one workgroup per (KV head, token, split)
// computes every query head of its KV head (GROUP of them) over the split's share of the
// token's visible positions (whole chunks, from positions[t], so a recorded step serves every
// later length), each K and V element read once for the whole group. Per CHUNK positions, an
// online softmax in two barriers: threads act as positions (the scores of all GROUP heads
// against one K column; K is stored transposed, so neighbouring threads read neighbouring
// positions), each part of the chunk (a subgroup) reduces its maximum and sum, then threads
// act as 4-dim slices of V rows (contiguous, so neighbouring threads read neighbouring dims)
// weighted by the probabilities. With one split the context is written directly; otherwise
// the split's (max, sum, unnormalised V sum) go to `partials` for attention_reduce.comp, an
// empty split writing a neutral one. Semantics as attention.comp: causal, the token's own
// block table, window > 0 -> only pos - window < j <= pos.
#extension GL_EXT_shader_16bit_storage : require
#if USE_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

const uint CHUNK = 128;  // positions per step, one per thread
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KV_F16 = 1;
layout(constant_id = 1) const uint GROUP = 1;      // query heads per KV head
layout(constant_id = 2) const uint HEAD_DIM = 64;  // up to 256
const uint QUADS = (HEAD_DIM + 3) / 4;   // groups of 4 dims: a thread's share of a V row
const uint ROW_LANES = CHUNK / QUADS;    // V rows read side by side, >= 2
const uint ROWS_PER_LANE = ((CHUNK + ROW_LANES - 1) / ROW_LANES + 3) / 4 * 4;  // consecutive, whole vec4s of probabilities
#if USE_SUBGROUPS
const uint MAX_PARTS = CHUNK / 4;  // subgroups of at least 4 threads (the host picks the _shared build otherwise)
#else
const uint PART_POSITIONS = 32;
const uint MAX_PARTS = CHUNK / PART_POSITIONS;
#endif

layout(set = 0, binding = 0) readonly buffer Queries { float q[]; };  // [n x n_head x head_dim]
layout(set = 0, binding = 1) readonly buffer KCache { uint16_t kc[]; };
layout(set = 0, binding = 2) readonly buffer VCache { uint16_t vc[]; };
// The same V cache, 4 values at a time: F16 as two words, F32 as four (head_dim a multiple of 4).
layout(set = 0, binding = 2) readonly buffer VCacheF16Quads { uvec2 vc_f16_quads[]; };
layout(set = 0, binding = 2) readonly buffer VCacheF32Quads { uvec4 vc_f32_quads[]; };
layout(set = 0, binding = 3) readonly buffer Tables { int tables[]; };           // block tables, concatenated
layout(set = 0, binding = 4) readonly buffer Positions { int pos[]; };           // [n]
layout(set = 0, binding = 5) readonly buffer TableStart { int table_start[]; };  // [n]
layout(set = 0, binding = 6) writeonly buffer Partials { float partials[]; };    // see partial_* below
layout(set = 0, binding = 7) writeonly buffer Output { float out_ctx[]; };       // [n x n_head x head_dim]

layout(push_constant) uniform Params {
    uint n_head;
    uint n_head_kv;
    uint block_tokens;
    float scale;  // of q.k
    uint window;  // 0: the whole context
    uint n_tokens;
    uint splits;
} p;

shared vec4 q_sh[GROUP * QUADS];        // zero past head_dim; the V sums at the end
shared vec4 prob_sh[GROUP * CHUNK / 4];  // [head][position] of the current chunk
shared int v_row_sh[CHUNK];              // element offset of each chunk position's V row
shared float max_parts_sh[GROUP * MAX_PARTS];  // [head][part of the chunk]
shared float sum_parts_sh[GROUP * MAX_PARTS];
#if !USE_SUBGROUPS
shared float score_sh[GROUP * CHUNK];
#endif

float cache_at(uint element, bool from_k) {
    if (KV_F16 != 0) return unpackHalf2x16(uint(from_k ? kc[element] : vc[element])).x;
    const uint lo = uint(from_k ? kc[2 * element] : vc[2 * element]);
    const uint hi = uint(from_k ? kc[2 * element + 1] : vc[2 * element + 1]);
    return uintBitsToFloat(lo | (hi << 16));
}

// Dims 4 * quad.. of the V row at `row` (0 past head_dim).
vec4 v_quad(uint row, uint quad) {
    if (HEAD_DIM % 4 == 0) {  // rows start at multiples of 4 elements
        if (KV_F16 != 0) {
            const uvec2 words = vc_f16_quads[row / 4 + quad];
            return vec4(unpackHalf2x16(words.x), unpackHalf2x16(words.y));
        }
        return uintBitsToFloat(vc_f32_quads[row / 4 + quad]);
    }
    vec4 v = vec4(0.0);
    for (uint k = 0; k < 4; ++k) {
        if (quad * 4 + k < HEAD_DIM) v[k] = cache_at(row + quad * 4 + k, false);
    }
    return v;
}

// The partial of (token t, query head h, split s): acc [D] first, then (max, sum) pairs.
uint partial_acc(uint t, uint h, uint s) { return ((t * p.n_head + h) * p.splits + s) * HEAD_DIM; }
uint partial_stats(uint t, uint h, uint s) {
    return p.n_tokens * p.n_head * p.splits * HEAD_DIM + ((t * p.n_head + h) * p.splits + s) * 2;
}

// The queries of the group's heads into q_sh, in groups of 4 dims (0 past head_dim).
void load_queries(uint q_base) {
    for (uint i = gl_LocalInvocationID.x; i < GROUP * QUADS; i += CHUNK) {
        const uint g = i / QUADS, d = (i % QUADS) * 4;
        vec4 quad = vec4(0.0);
        for (uint k = 0; k < 4; ++k) {
            if (d + k < HEAD_DIM) quad[k] = q[q_base + g * HEAD_DIM + d + k];
        }
        q_sh[i] = quad;
    }
}

// The position role: the scaled scores of the K column at k_base against every head's query.
void key_scores(uint k_base, out float score[GROUP]) {
    for (uint g = 0; g < GROUP; ++g) score[g] = 0.0;
    for (uint d4 = 0; d4 < QUADS; ++d4) {
        vec4 k4 = vec4(0.0);
        for (uint k = 0; k < 4; ++k) {
            if (d4 * 4 + k < HEAD_DIM) k4[k] = cache_at(k_base + (d4 * 4 + k) * p.block_tokens, true);
        }
        for (uint g = 0; g < GROUP; ++g) score[g] += dot(q_sh[g * QUADS + d4], k4);
    }
    for (uint g = 0; g < GROUP; ++g) score[g] *= p.scale;
}

// Per part of the chunk (a subgroup, or PART_POSITIONS positions) its maximum score and its
// sum of exp(score - that maximum), per head, into max_parts_sh / sum_parts_sh; returns the
// number of parts. Called by every thread, `score` of its position (-inf when not visible).
uint publish_parts(float score[GROUP], bool valid) {
    const uint tid = gl_LocalInvocationID.x;
#if USE_SUBGROUPS
    for (uint g = 0; g < GROUP; ++g) {
        const float m = subgroupMax(score[g]);
        const float s = subgroupAdd(valid ? exp(score[g] - m) : 0.0);
        if (subgroupElect()) {
            max_parts_sh[g * MAX_PARTS + gl_SubgroupID] = m;
            sum_parts_sh[g * MAX_PARTS + gl_SubgroupID] = s;
        }
    }
    return gl_NumSubgroups;
#else
    for (uint g = 0; g < GROUP; ++g) score_sh[g * CHUNK + tid] = score[g];
    barrier();
    if (tid < GROUP * MAX_PARTS) {
        const uint first_score = (tid / MAX_PARTS) * CHUNK + (tid % MAX_PARTS) * PART_POSITIONS;
        float m = -1.0 / 0.0, s = 0.0;
        for (uint i = 0; i < PART_POSITIONS; ++i) m = max(m, score_sh[first_score + i]);
        for (uint i = 0; i < PART_POSITIONS; ++i) {
            const float x = score_sh[first_score + i];
            s += x > -1.0 / 0.0 ? exp(x - m) : 0.0;
        }
        max_parts_sh[tid] = m;
        sum_parts_sh[tid] = s;
    }
    return MAX_PARTS;
#endif
}

// The dimension role: dims 4 * quad.. of the chunk's V rows row_begin..row_end, weighted by
// their probabilities, added to acc.
void accumulate_values(uint row_begin, uint row_end, uint quad, inout vec4 acc[GROUP]) {
    for (uint r = row_begin; r < row_end; r += 4) {
        // 4 rows at a time: one vec4 of probabilities per head.
        vec4 v[4];
        for (uint k = 0; k < 4; ++k) v[k] = r + k < row_end ? v_quad(uint(v_row_sh[r + k]), quad) : vec4(0.0);
        for (uint g = 0; g < GROUP; ++g) {
            const vec4 pr = prob_sh[(g * CHUNK + r) / 4];
            acc[g] += pr.x * v[0] + pr.y * v[1] + pr.z * v[2] + pr.w * v[3];
        }
    }
}

// Adds up the V sums of the row lanes (one after the other, in q_sh, no longer needed), then
// writes the context (one split) or the split's partial.
void write_result(uint t, uint first_head, uint split, uint row_lane, uint quad, vec4 acc[GROUP],
                  float running_max[GROUP], float running_sum[GROUP]) {
    const uint tid = gl_LocalInvocationID.x;
    for (uint lane = 0; lane < ROW_LANES; ++lane) {
        barrier();
        if (row_lane == lane) {
            for (uint g = 0; g < GROUP; ++g) q_sh[g * QUADS + quad] = lane == 0 ? acc[g] : q_sh[g * QUADS + quad] + acc[g];
        }
    }
    barrier();
    const uint q_base = (t * p.n_head + first_head) * HEAD_DIM;
    for (uint g = 0; g < GROUP; ++g) {
        for (uint d = tid; d < HEAD_DIM; d += CHUNK) {
            const float sum = q_sh[g * QUADS + d / 4][d % 4];
            if (p.splits == 1) {
                out_ctx[q_base + g * HEAD_DIM + d] = sum / running_sum[g];
            } else {
                partials[partial_acc(t, first_head + g, split) + d] = sum;
            }
        }
    }
    if (p.splits > 1 && tid < GROUP) {
        // Every thread holds the same max and sum; one per head writes them.
        for (uint g = 0; g < GROUP; ++g) {
            if (g != tid) continue;
            const uint at = partial_stats(t, first_head + g, split);
            partials[at] = running_max[g];
            partials[at + 1] = running_sum[g];
        }
    }
}

void main() {
    const uint group_id = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    if (group_id >= p.n_head_kv * p.n_tokens * p.splits) return;
    const uint split = group_id % p.splits;
    const uint kv_head = (group_id / p.splits) % p.n_head_kv;
    const uint t = group_id / (p.splits * p.n_head_kv);
    const uint tid = gl_LocalInvocationID.x;
    const uint first_head = kv_head * GROUP;

    // The split's share of the visible positions, in whole chunks.
    const uint n_ctx = uint(pos[t]) + 1;
    const uint first = p.window != 0 && n_ctx > p.window ? n_ctx - p.window : 0;
    const uint per_split = ((n_ctx - first + p.splits - 1) / p.splits + CHUNK - 1) / CHUNK * CHUNK;
    const uint lo = min(first + split * per_split, n_ctx);
    const uint hi = min(lo + per_split, n_ctx);
    if (lo == hi) {  // only when splits > 1: a neutral partial (weight 0; its V sum is not read)
        if (tid < GROUP) {
            const uint at = partial_stats(t, first_head + tid, split);
            partials[at] = -1.0 / 0.0;
            partials[at + 1] = 0.0;
        }
        return;
    }

    const uint kv_dim = p.n_head_kv * HEAD_DIM;
    const uint block_elements = p.block_tokens * kv_dim;
    const uint table = uint(table_start[t]);
    const uint q_base = (t * p.n_head + first_head) * HEAD_DIM;
    load_queries(q_base);

    // Dimension role: dims 4 * quad.. of the chunk's rows row_begin..row_begin + ROWS_PER_LANE.
    const uint row_lane = tid / QUADS;
    const uint quad = tid % QUADS;
    const uint row_begin = row_lane * ROWS_PER_LANE;
    const bool dim_active = row_lane < ROW_LANES;
    float running_max[GROUP], running_sum[GROUP];
    vec4 acc[GROUP];
    for (uint g = 0; g < GROUP; ++g) {
        running_max[g] = -1.0 / 0.0;
        running_sum[g] = 0.0;
        acc[g] = vec4(0.0);
    }
    barrier();  // q_sh

    for (uint start = lo; start < hi; start += CHUNK) {
        // Position role: the scores of position j for every head of the group.
        const uint j = start + tid;
        const bool valid = j < hi;
        float score[GROUP];
        uint base = 0, offset = 0;
        if (valid) {
            base = uint(tables[table + j / p.block_tokens]) * block_elements;
            offset = j % p.block_tokens;
            key_scores(base + kv_head * HEAD_DIM * p.block_tokens + offset, score);
        } else {
            for (uint g = 0; g < GROUP; ++g) score[g] = -1.0 / 0.0;
        }
        const uint n_parts = publish_parts(score, valid);
        barrier();  // the parts; the previous chunk's V pass is done with prob_sh and v_row_sh

        float chunk_max[GROUP];
        for (uint g = 0; g < GROUP; ++g) {
            float m = running_max[g];
            for (uint i = 0; i < n_parts; ++i) m = max(m, max_parts_sh[g * MAX_PARTS + i]);
            chunk_max[g] = m;  // finite: the chunk holds a visible position
            float s = 0.0;
            for (uint i = 0; i < n_parts; ++i) s += sum_parts_sh[g * MAX_PARTS + i] * exp(max_parts_sh[g * MAX_PARTS + i] - m);
            const float correction = exp(running_max[g] - m);
            running_sum[g] = running_sum[g] * correction + s;
            running_max[g] = m;
            acc[g] *= correction;
        }
        v_row_sh[tid] = int(base + offset * kv_dim + kv_head * HEAD_DIM);
        for (uint g = 0; g < GROUP; ++g) prob_sh[(g * CHUNK + tid) / 4][tid % 4] = valid ? exp(score[g] - chunk_max[g]) : 0.0;
        barrier();  // probabilities (0 past the chunk's end) and the V rows

        const uint row_end = min(min(row_begin + ROWS_PER_LANE, CHUNK), hi - start);
        if (dim_active) accumulate_values(row_begin, row_end, quad, acc);
    }

    write_result(t, first_head, split, row_lane, quad, acc, running_max, running_sum);
}
