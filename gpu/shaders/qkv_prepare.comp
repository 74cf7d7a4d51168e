#version 450
// Everything between the q/k/v products and attention, in one dispatch: the biases, the
// per-head Q/K RMS norms, RoPE of q and k, and the store of k and v in the paged cache. One
// workgroup per (head, token); heads [0, n_head) are q's (rotated in place), then n_head_kv
// of k (rotated, then stored) and n_head_kv of v (stored). The order of operations and the
// per-element arithmetic are the CPU backend's: bias add, rms_norm_row, apply_rope, store.
#extension GL_EXT_shader_16bit_storage : require
#extension GL_GOOGLE_include_directive : require

#include "f16.glsl"

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KV_F16 = 1;
const uint THREADS = 64;
const uint MAX_HEAD_DIM = 256;

layout(set = 0, binding = 0) buffer Q { float q[]; };                    // [n x n_head x head_dim]
layout(set = 0, binding = 1) readonly buffer K { float k[]; };           // [n x n_head_kv x head_dim]
layout(set = 0, binding = 2) readonly buffer V { float v[]; };           // [n x n_head_kv x head_dim]
layout(set = 0, binding = 3) readonly buffer Bias { float bias[]; };     // [q_dim | kv_dim | kv_dim] when has_bias
layout(set = 0, binding = 4) readonly buffer Norms { float norm_w[]; };  // [head_dim (q) | head_dim (k)]
layout(set = 0, binding = 5) readonly buffer Positions { int pos[]; };   // [n]
layout(set = 0, binding = 6) readonly buffer Table { vec2 cos_sin[]; };  // [positions x rope_dim/2]
layout(set = 0, binding = 7) readonly buffer Slots { int slots[]; };     // [n] block * block_tokens + offset
layout(set = 0, binding = 8) buffer KCache { uint16_t kc[]; };
layout(set = 0, binding = 9) buffer VCache { uint16_t vc[]; };

#include "kv_cache_store.glsl"

layout(push_constant) uniform Params {
    uint n_head;
    uint n_head_kv;
    uint head_dim;
    uint rope_dim;
    uint neox;          // 1: pairs (i, i + rope_dim/2); 0: pairs (2i, 2i+1)
    uint flags;         // 1: biases, 2: q norm, 4: k norm
    float eps;
    uint block_tokens;
} p;

shared float head_sh[MAX_HEAD_DIM];
shared float partial[THREADS];

float sum_over_workgroup(float value) {
    const uint tid = gl_LocalInvocationID.x;
    partial[tid] = value;
    barrier();
    for (uint stride = THREADS / 2; stride > 0; stride /= 2) {
        if (tid < stride) partial[tid] += partial[tid + stride];
        barrier();
    }
    return partial[0];
}

void main() {
    const uint head = gl_WorkGroupID.x;
    const uint t = gl_WorkGroupID.y;
    const uint tid = gl_LocalInvocationID.x;
    const uint hd = p.head_dim;
    const uint kv_dim = p.n_head_kv * hd;
    const bool is_q = head < p.n_head;
    const bool is_k = !is_q && head < p.n_head + p.n_head_kv;
    const uint kv_head = is_q ? 0 : (head - p.n_head) % p.n_head_kv;
    const uint src = is_q ? (t * p.n_head + head) * hd : t * kv_dim + kv_head * hd;
    const uint bias_base = is_q ? head * hd : p.n_head * hd + (is_k ? 0 : kv_dim) + kv_head * hd;

    float sum_sq = 0.0;
    for (uint d = tid; d < hd; d += THREADS) {
        float x = is_q ? q[src + d] : (is_k ? k[src + d] : v[src + d]);
        if ((p.flags & 1u) != 0) x += bias[bias_base + d];
        head_sh[d] = x;
        sum_sq += x * x;
    }
    const bool norm = is_q ? (p.flags & 2u) != 0 : is_k && (p.flags & 4u) != 0;
    if (norm) {  // uniform per workgroup
        const float scale = 1.0 / sqrt(sum_over_workgroup(sum_sq) / float(hd) + p.eps);
        const uint w_base = is_q ? 0 : hd;
        for (uint d = tid; d < hd; d += THREADS) head_sh[d] = (head_sh[d] * scale) * norm_w[w_base + d];
    }
    barrier();
    if (is_q || is_k) {
        const uint half_dim = p.rope_dim / 2;
        for (uint i = tid; i < half_dim; i += THREADS) {
            const uvec2 pair = rope_pair(i, half_dim, p.neox != 0);
            const vec2 rotated = rotate_pair(head_sh[pair.x], head_sh[pair.y], cos_sin[uint(pos[t]) * half_dim + i]);
            head_sh[pair.x] = rotated.x;
            head_sh[pair.y] = rotated.y;
        }
        barrier();
    }
    if (is_q) {
        for (uint d = tid; d < hd; d += THREADS) q[src + d] = head_sh[d];
        return;
    }
    for (uint d = tid; d < hd; d += THREADS) store_kv(uint(slots[t]), kv_head * hd + d, kv_dim, p.block_tokens, head_sh[d], is_k, KV_F16 != 0);
}
