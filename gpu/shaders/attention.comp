#version 450
// Causal attention over the paged KV cache, one workgroup per (query head, token): the
// token attends to positions 0..pos of its own sequence (window > 0, a sliding-window layer:
// only pos - window < j <= pos), CHUNK positions at a time, with an
// online softmax (a running maximum and sum rescale the partial output), so no score
// vector longer than CHUNK is ever stored. The same kernel serves decode (one token per
// sequence) and prefill (many tokens, each its own workgroup).
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KV_F16 = 1;
const uint CHUNK = 64;
const uint MAX_HEAD_DIM = 256;
const uint DIMS_PER_THREAD = MAX_HEAD_DIM / CHUNK;

layout(set = 0, binding = 0) readonly buffer Queries { float q[]; };        // [n x n_head x head_dim]
layout(set = 0, binding = 1) readonly buffer KCache { uint16_t kc[]; };
layout(set = 0, binding = 2) readonly buffer VCache { uint16_t vc[]; };
layout(set = 0, binding = 3) readonly buffer Tables { int tables[]; };      // block tables, concatenated
layout(set = 0, binding = 4) readonly buffer Positions { int pos[]; };      // [n]
layout(set = 0, binding = 5) readonly buffer TableStart { int table_start[]; };  // [n] where each token's table begins
layout(set = 0, binding = 6) writeonly buffer Output { float out_ctx[]; };  // [n x n_head x head_dim]

layout(push_constant) uniform Params {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint block_tokens;
    float scale;   // of q.k
    uint window;   // 0: the whole context
} p;

shared float q_sh[MAX_HEAD_DIM];
shared float prob[CHUNK];
shared float reduce_sh[CHUNK];
shared int slot_base[CHUNK];  // element offset of each chunk position's block

float cache_at(uint element, bool from_k) {
    if (KV_F16 != 0) return unpackHalf2x16(uint(from_k ? kc[element] : vc[element])).x;
    const uint lo = uint(from_k ? kc[2 * element] : vc[2 * element]);
    const uint hi = uint(from_k ? kc[2 * element + 1] : vc[2 * element + 1]);
    return uintBitsToFloat(lo | (hi << 16));
}

// Reduces reduce_sh to its maximum (take_max) or sum, returned to every thread.
float reduce_chunk(float value, bool take_max) {
    const uint tid = gl_LocalInvocationID.x;
    reduce_sh[tid] = value;
    barrier();
    for (uint stride = CHUNK / 2; stride > 0; stride /= 2) {
        if (tid < stride) {
            const float other = reduce_sh[tid + stride];
            reduce_sh[tid] = take_max ? max(reduce_sh[tid], other) : reduce_sh[tid] + other;
        }
        barrier();
    }
    const float result = reduce_sh[0];
    barrier();
    return result;
}

void main() {
    const uint head = gl_WorkGroupID.x;
    const uint t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint kv_head = head / (p.n_head / p.n_head_kv);
    const uint kv_dim = p.n_head_kv * p.head_dim;
    const uint block_elements = p.block_tokens * kv_dim;
    const uint n_ctx = uint(pos[t]) + 1;
    const uint first = p.window != 0 && n_ctx > p.window ? n_ctx - p.window : 0;
    const uint table = uint(table_start[t]);
    const uint q_base = (t * p.n_head + head) * p.head_dim;
    for (uint d = tid; d < p.head_dim; d += CHUNK) q_sh[d] = q[q_base + d];

    float running_max = -1.0 / 0.0;
    float running_sum = 0.0;
    float acc[DIMS_PER_THREAD];
    for (uint k = 0; k < DIMS_PER_THREAD; ++k) acc[k] = 0.0;
    for (uint start = first; start < n_ctx; start += CHUNK) {
        const uint j = start + tid;
        uint k_base = 0;
        if (j < n_ctx) {
            const uint base = uint(tables[table + j / p.block_tokens]) * block_elements;
            const uint offset = j % p.block_tokens;
            slot_base[tid] = int(base + offset * kv_dim + kv_head * p.head_dim);  // V row of position j
            k_base = base + kv_head * p.head_dim * p.block_tokens + offset;
        }
        barrier();  // q_sh is written before the first chunk reads it
        float score = -1.0 / 0.0;
        if (j < n_ctx) {
            float s = 0.0;
            for (uint d = 0; d < p.head_dim; ++d) s += q_sh[d] * cache_at(k_base + d * p.block_tokens, true);
            score = s * p.scale;
        }
        const float chunk_max = reduce_chunk(score, true);
        const float new_max = max(running_max, chunk_max);
        const float pr = j < n_ctx ? exp(score - new_max) : 0.0;
        prob[tid] = pr;
        const float chunk_sum = reduce_chunk(pr, false);  // its barriers also publish prob and slot_base
        const float correction = exp(running_max - new_max);
        running_sum = running_sum * correction + chunk_sum;
        running_max = new_max;
        const uint len = min(CHUNK, n_ctx - start);
        for (uint k = 0; k < DIMS_PER_THREAD; ++k) {
            const uint d = tid + k * CHUNK;
            if (d >= p.head_dim) break;
            float a = acc[k] * correction;
            for (uint jj = 0; jj < len; ++jj) a += prob[jj] * cache_at(uint(slot_base[jj]) + d, false);
            acc[k] = a;
        }
        barrier();  // prob and slot_base are rewritten by the next chunk
    }
    for (uint k = 0; k < DIMS_PER_THREAD; ++k) {
        const uint d = tid + k * CHUNK;
        if (d < p.head_dim) out_ctx[q_base + d] = acc[k] / running_sum;
    }
}
