#version 450
// Flash-decoding attention over the paged KV cache: one workgroup per (KV head, part of its
// query heads, tile of TILE consecutive tokens, split) computes the part's query heads (GROUP,
// the last part's fewer; one part unless a KV head has more than 16) for each token of the
// tile, over the split's share of the positions the tokens see (whole chunks, from
// positions[t], so a recorded step serves every later length). Each K and V element is
// read once for all of the tile's query rows: decode has tiles of one token; a prompt's tokens
// share their sequence's cache, which tiles of several read once per tile instead of once per
// token and query head. A tile's tokens are taken in runs of one sequence (one block table).
// Per CHUNK positions, an online softmax in two barriers: threads act as positions (the scores
// of all rows against one K column; K is stored transposed, so neighbouring threads read
// neighbouring positions), each part of the chunk (a subgroup) reduces its maximum and sum,
// then threads act as 4-dim slices of V rows (contiguous, so neighbouring threads read
// neighbouring dims) weighted by the probabilities. With one split the context is written
// directly; otherwise the split's (max, sum, unnormalised V sum) go to `partials` (a split a
// row sees nothing of writes a neutral one, max -inf) and the workgroup that finishes its
// tile's and heads' last split combines them all into the context, found by a counter per
// (tile, KV head, head part) that each split's workgroup adds itself to once its partials are
// visible: a split count above one costs no second dispatch and barrier.
// Causal: token t sees positions j <= positions[t] of its own sequence (block table), and on a
// sliding-window layer (window > 0) only positions[t] - window < j.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require
#if USE_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

const uint CHUNK = 128;  // positions per step, one per thread
layout(local_size_x = 128) in;
layout(constant_id = 0) const uint KV_F16 = 1;
layout(constant_id = 1) const uint GROUP = 1;      // query heads per workgroup
layout(constant_id = 2) const uint HEAD_DIM = 64;  // up to 256
layout(constant_id = 3) const uint TILE = 1;       // query tokens per workgroup
const uint ROWS = GROUP * TILE;  // query rows: token i of the tile and head g at row i * GROUP + g
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
// Coherent: the splits' workgroups write them and the last one reads them in the same dispatch.
layout(set = 0, binding = 6) coherent buffer Partials { float partials[]; };  // see partial_* below
layout(set = 0, binding = 7) writeonly buffer Output { float out_ctx[]; };    // [n x n_head x head_dim]
// Per (tile, KV head, head part): how many of its splits have written their partials; zero
// before and after every dispatch (the last split resets it).
layout(set = 0, binding = 8) coherent buffer SplitCounters { uint finish_counters[]; };

layout(push_constant) uniform Params {
    uint n_head;
    uint n_head_kv;
    uint block_tokens;
    float scale;  // of q.k
    uint window;  // 0: the whole context
    uint n_tokens;
    uint splits;
} p;

shared vec4 q_sh[ROWS * QUADS];        // zero past head_dim; the V sums at the end
shared vec4 prob_sh[ROWS * CHUNK / 4];  // [row][position] of the current chunk
shared int v_row_sh[CHUNK];             // element offset of each chunk position's V row
shared float max_parts_sh[ROWS * MAX_PARTS];  // [row][part of the chunk]
shared float sum_parts_sh[ROWS * MAX_PARTS];
#if !USE_SUBGROUPS
shared float score_sh[ROWS * CHUNK];
#endif

const float NO_SCORE = -1.0 / 0.0;  // a position the row does not see

#include "finish_counter.glsl"

// The workgroup's query heads first_head.. (heads_here of them, at most GROUP) of KV head kv_head.
uint kv_head, first_head, heads_here;
// The tokens of the current run: tile tokens run_begin.. (run_tokens of them) of one sequence,
// token i seeing positions [visible_begin[i], visible_end[i]).
uint run_begin, run_tokens;
uint visible_begin[TILE], visible_end[TILE];

// Whether the row is one of the run's tokens and one of the workgroup's heads.
bool row_active(uint row) { return row / GROUP < run_tokens && row % GROUP < heads_here; }

bool row_sees(uint row, uint j) {
    const uint i = row / GROUP;
    return row_active(row) && j >= visible_begin[i] && j < visible_end[i];
}

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

// The run's queries (every head of the group for each token) into q_sh, in groups of 4 dims
// (0 past head_dim and past the run).
void load_queries() {
    for (uint i = gl_LocalInvocationID.x; i < ROWS * QUADS; i += CHUNK) {
        const uint row = i / QUADS, d = (i % QUADS) * 4;
        const uint q_base = ((run_begin + row / GROUP) * p.n_head + first_head + row % GROUP) * HEAD_DIM;
        vec4 quad = vec4(0.0);
        for (uint k = 0; k < 4; ++k) {
            if (d + k < HEAD_DIM && row_active(row)) quad[k] = q[q_base + d + k];
        }
        q_sh[i] = quad;
    }
}

// The position role: the scaled scores of position j's K column (at k_base) against every
// row's query; NO_SCORE where the row does not see j.
void key_scores(uint k_base, uint j, out float score[ROWS]) {
    for (uint r = 0; r < ROWS; ++r) score[r] = 0.0;
    for (uint d4 = 0; d4 < QUADS; ++d4) {
        vec4 k4 = vec4(0.0);
        for (uint k = 0; k < 4; ++k) {
            if (d4 * 4 + k < HEAD_DIM) k4[k] = cache_at(k_base + (d4 * 4 + k) * p.block_tokens, true);
        }
        for (uint r = 0; r < ROWS; ++r) score[r] += dot(q_sh[r * QUADS + d4], k4);
    }
    for (uint r = 0; r < ROWS; ++r) score[r] = row_sees(r, j) ? score[r] * p.scale : NO_SCORE;
}

// Per part of the chunk (a subgroup, or PART_POSITIONS positions) its maximum score and its
// sum of exp(score - that maximum), per row, into max_parts_sh / sum_parts_sh; returns the
// number of parts. Called by every thread, `score` of its position (NO_SCORE where not seen; a
// part that a row sees nothing of has maximum NO_SCORE and sum 0).
uint publish_parts(float score[ROWS]) {
    const uint tid = gl_LocalInvocationID.x;
#if USE_SUBGROUPS
    for (uint r = 0; r < ROWS; ++r) {
        const float m = subgroupMax(score[r]);
        const float s = subgroupAdd(score[r] > NO_SCORE ? exp(score[r] - m) : 0.0);
        if (subgroupElect()) {
            max_parts_sh[r * MAX_PARTS + gl_SubgroupID] = m;
            sum_parts_sh[r * MAX_PARTS + gl_SubgroupID] = s;
        }
    }
    return gl_NumSubgroups;
#else
    for (uint r = 0; r < ROWS; ++r) score_sh[r * CHUNK + tid] = score[r];
    barrier();
    if (tid < ROWS * MAX_PARTS) {
        const uint first_score = (tid / MAX_PARTS) * CHUNK + (tid % MAX_PARTS) * PART_POSITIONS;
        float m = NO_SCORE, s = 0.0;
        for (uint i = 0; i < PART_POSITIONS; ++i) m = max(m, score_sh[first_score + i]);
        for (uint i = 0; i < PART_POSITIONS; ++i) {
            const float x = score_sh[first_score + i];
            s += x > NO_SCORE ? exp(x - m) : 0.0;
        }
        max_parts_sh[tid] = m;
        sum_parts_sh[tid] = s;
    }
    return MAX_PARTS;
#endif
}

// The dimension role: dims 4 * quad.. of the chunk's V rows row_begin..row_end, weighted by
// their probabilities, added to acc.
void accumulate_values(uint row_begin, uint row_end, uint quad, inout vec4 acc[ROWS]) {
    for (uint r = row_begin; r < row_end; r += 4) {
        // 4 V rows at a time: one vec4 of probabilities per query row.
        vec4 v[4];
        for (uint k = 0; k < 4; ++k) v[k] = r + k < row_end ? v_quad(uint(v_row_sh[r + k]), quad) : vec4(0.0);
        for (uint row = 0; row < ROWS; ++row) {
            const vec4 pr = prob_sh[(row * CHUNK + r) / 4];
            acc[row] += pr.x * v[0] + pr.y * v[1] + pr.z * v[2] + pr.w * v[3];
        }
    }
}

// Adds up the V sums of the row lanes (one after the other, in q_sh, no longer needed), then
// writes each of the run's rows: its context (one split) or the split's partial.
void write_result(uint split, uint row_lane, uint quad, vec4 acc[ROWS], float running_max[ROWS],
                  float running_sum[ROWS]) {
    const uint tid = gl_LocalInvocationID.x;
    for (uint lane = 0; lane < ROW_LANES; ++lane) {
        barrier();
        if (row_lane == lane) {
            for (uint r = 0; r < ROWS; ++r) q_sh[r * QUADS + quad] = lane == 0 ? acc[r] : q_sh[r * QUADS + quad] + acc[r];
        }
    }
    barrier();
    for (uint r = 0; r < run_tokens * GROUP; ++r) {
        if (!row_active(r)) continue;
        const uint t = run_begin + r / GROUP, head = first_head + r % GROUP;
        for (uint d = tid; d < HEAD_DIM; d += CHUNK) {
            const float sum = q_sh[r * QUADS + d / 4][d % 4];
            if (p.splits == 1) {
                out_ctx[(t * p.n_head + head) * HEAD_DIM + d] = sum / running_sum[r];
            } else {
                partials[partial_acc(t, head, split) + d] = sum;
            }
        }
        // Every thread holds the same max and sum; one writes them.
        if (p.splits > 1 && tid == r % CHUNK) {
            const uint at = partial_stats(t, head, split);
            partials[at] = running_max[r];
            partials[at + 1] = running_sum[r];
        }
    }
    barrier();  // q_sh is the next run's
}

// The run's attention over the split's share of the positions its tokens see.
void attend_run(uint split) {
    const uint tid = gl_LocalInvocationID.x;
    uint run_lo = 0xFFFFFFFFu, run_hi = 0;
    for (uint i = 0; i < run_tokens; ++i) {
        run_lo = min(run_lo, visible_begin[i]);
        run_hi = max(run_hi, visible_end[i]);
    }
    const uint per_split = ((run_hi - run_lo + p.splits - 1) / p.splits + CHUNK - 1) / CHUNK * CHUNK;
    const uint lo = min(run_lo + split * per_split, run_hi);
    const uint hi = min(lo + per_split, run_hi);

    const uint kv_dim = p.n_head_kv * HEAD_DIM;
    const uint block_elements = p.block_tokens * kv_dim;
    const uint table = uint(table_start[run_begin]);
    load_queries();

    // Dimension role: dims 4 * quad.. of the chunk's rows row_begin..row_begin + ROWS_PER_LANE.
    const uint row_lane = tid / QUADS;
    const uint quad = tid % QUADS;
    const uint row_begin = row_lane * ROWS_PER_LANE;
    const bool dim_active = row_lane < ROW_LANES;
    float running_max[ROWS], running_sum[ROWS];
    vec4 acc[ROWS];
    for (uint r = 0; r < ROWS; ++r) {
        running_max[r] = NO_SCORE;  // an empty split leaves a neutral partial: weight 0
        running_sum[r] = 0.0;
        acc[r] = vec4(0.0);
    }
    barrier();  // q_sh

    for (uint start = lo; start < hi; start += CHUNK) {
        // Position role: the scores of position j for every row.
        const uint j = start + tid;
        const bool valid = j < hi;
        float score[ROWS];
        uint base = 0, offset = 0;
        if (valid) {
            base = uint(tables[table + j / p.block_tokens]) * block_elements;
            offset = j % p.block_tokens;
            key_scores(base + kv_head * HEAD_DIM * p.block_tokens + offset, j, score);
        } else {
            for (uint r = 0; r < ROWS; ++r) score[r] = NO_SCORE;
        }
        const uint n_parts = publish_parts(score);
        barrier();  // the parts; the previous chunk's V pass is done with prob_sh and v_row_sh

        float chunk_max[ROWS];
        for (uint r = 0; r < ROWS; ++r) {
            float m = running_max[r];
            for (uint i = 0; i < n_parts; ++i) m = max(m, max_parts_sh[r * MAX_PARTS + i]);
            chunk_max[r] = m;
            if (m == NO_SCORE) continue;  // the row has seen no position yet
            float s = 0.0;
            for (uint i = 0; i < n_parts; ++i) s += sum_parts_sh[r * MAX_PARTS + i] * exp(max_parts_sh[r * MAX_PARTS + i] - m);
            const float correction = exp(running_max[r] - m);
            running_sum[r] = running_sum[r] * correction + s;
            running_max[r] = m;
            acc[r] *= correction;
        }
        v_row_sh[tid] = int(base + offset * kv_dim + kv_head * HEAD_DIM);
        for (uint r = 0; r < ROWS; ++r) {
            prob_sh[(r * CHUNK + tid) / 4][tid % 4] = score[r] > NO_SCORE ? exp(score[r] - chunk_max[r]) : 0.0;
        }
        barrier();  // probabilities (0 where not seen) and the V rows

        const uint row_end = min(min(row_begin + ROWS_PER_LANE, CHUNK), hi - start);
        if (dim_active) accumulate_values(row_begin, row_end, quad, acc);
    }

    write_result(split, row_lane, quad, acc, running_max, running_sum);
}

// The context of the workgroup's heads for tile tokens tile_begin..tile_end from every split's
// partial: each split's V sum and softmax sum rescaled from its own maximum to the overall one
// (a split a row saw nothing of has maximum -inf: weight 0). Each row's overall maximum and
// sum first (into max_parts_sh / sum_parts_sh, free now); then, CHUNK splits at a time, each
// (row, split)'s weight once (into prob_sh) and each (row, dim)'s weighted sum (in q_sh).
void combine_splits(uint tile_begin, uint tile_end) {
    const uint tid = gl_LocalInvocationID.x;
    const uint rows = (tile_end - tile_begin) * GROUP;
    for (uint r = tid; r < rows; r += CHUNK) {
        if (r % GROUP >= heads_here) continue;
        const uint stats = partial_stats(tile_begin + r / GROUP, first_head + r % GROUP, 0);
        float overall_max = NO_SCORE;
        for (uint s = 0; s < p.splits; ++s) overall_max = max(overall_max, partials[stats + 2 * s]);
        float total = 0.0;
        for (uint s = 0; s < p.splits; ++s) total += exp(partials[stats + 2 * s] - overall_max) * partials[stats + 2 * s + 1];
        max_parts_sh[r] = overall_max;
        sum_parts_sh[r] = total;
    }
    for (uint i = tid; i < rows * QUADS; i += CHUNK) q_sh[i] = vec4(0.0);
    for (uint first = 0; first < p.splits; first += CHUNK) {
        const uint count = min(CHUNK, p.splits - first);
        barrier();  // the row totals; the previous splits' weights are used
        for (uint i = tid; i < rows * count; i += CHUNK) {
            const uint r = i / count, s = i % count;
            if (r % GROUP >= heads_here) continue;
            const uint stats = partial_stats(tile_begin + r / GROUP, first_head + r % GROUP, first + s);
            prob_sh[(r * CHUNK + s) / 4][s % 4] = exp(partials[stats] - max_parts_sh[r]) / sum_parts_sh[r];
        }
        barrier();
        for (uint i = tid; i < rows * HEAD_DIM; i += CHUNK) {
            const uint r = i / HEAD_DIM, d = i % HEAD_DIM;
            if (r % GROUP >= heads_here) continue;
            const uint t = tile_begin + r / GROUP, head = first_head + r % GROUP;
            float sum = q_sh[r * QUADS + d / 4][d % 4];
            for (uint s = 0; s < count; ++s) {
                const float weight = prob_sh[(r * CHUNK + s) / 4][s % 4];
                if (weight != 0.0) sum += weight * partials[partial_acc(t, head, first + s) + d];
            }
            q_sh[r * QUADS + d / 4][d % 4] = sum;
        }
    }
    barrier();
    for (uint i = tid; i < rows * HEAD_DIM; i += CHUNK) {
        const uint r = i / HEAD_DIM, d = i % HEAD_DIM;
        if (r % GROUP >= heads_here) continue;
        out_ctx[((tile_begin + r / GROUP) * p.n_head + first_head + r % GROUP) * HEAD_DIM + d] = q_sh[r * QUADS + d / 4][d % 4];
    }
}

void main() {
    const uint group_id = gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x;
    const uint tiles = (p.n_tokens + TILE - 1) / TILE;
    const uint heads_per_kv = p.n_head / p.n_head_kv;
    const uint head_parts = (heads_per_kv + GROUP - 1) / GROUP;
    if (group_id >= p.n_head_kv * head_parts * tiles * p.splits) return;
    const uint split = group_id % p.splits;
    const uint head_part = (group_id / p.splits) % head_parts;
    kv_head = (group_id / (p.splits * head_parts)) % p.n_head_kv;
    first_head = kv_head * heads_per_kv + head_part * GROUP;
    heads_here = min(GROUP, heads_per_kv - head_part * GROUP);
    const uint tile_begin = group_id / (p.splits * head_parts * p.n_head_kv) * TILE;
    const uint tile_end = min(tile_begin + TILE, p.n_tokens);

    // Runs of consecutive tokens with one block table (usually the whole tile).
    for (run_begin = tile_begin; run_begin < tile_end; run_begin += run_tokens) {
        run_tokens = 0;
        while (run_begin + run_tokens < tile_end && table_start[run_begin + run_tokens] == table_start[run_begin]) {
            const uint t = run_begin + run_tokens;
            const uint n_ctx = uint(pos[t]) + 1;
            visible_begin[run_tokens] = p.window != 0 && n_ctx > p.window ? n_ctx - p.window : 0;
            visible_end[run_tokens] = n_ctx;
            ++run_tokens;
        }
        attend_run(split);
    }
    if (p.splits > 1 && finished_last(group_id / p.splits, p.splits)) combine_splits(tile_begin, tile_end);
}
