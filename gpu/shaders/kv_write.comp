#version 450
// Stores each token's K and V in its slot of the paged cache, in the CPU backend's layout
// per layer and block:
//   K: [n_head_kv][head_dim][block_tokens]   V: [block_tokens][n_head_kv][head_dim]
// KV_F16 (specialization constant): F16 elements, else F32 as two 16-bit words.
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x = 64) in;
layout(constant_id = 0) const uint KV_F16 = 1;

layout(set = 0, binding = 0) readonly buffer KeysIn { float k[]; };    // [n x kv_dim]
layout(set = 0, binding = 1) readonly buffer ValuesIn { float v[]; };  // [n x kv_dim]
layout(set = 0, binding = 2) buffer KCache { uint16_t kc[]; };
layout(set = 0, binding = 3) buffer VCache { uint16_t vc[]; };
layout(set = 0, binding = 4) readonly buffer Slots { int slots[]; };   // [n] block * block_tokens + offset

layout(push_constant) uniform Params {
    uint n;
    uint kv_dim;
    uint block_tokens;
} p;

void store(uint element, float value, bool to_k) {
    if (KV_F16 != 0) {
        const uint bits = packHalf2x16(vec2(value, 0.0)) & 0xFFFFu;
        if (to_k) kc[element] = uint16_t(bits); else vc[element] = uint16_t(bits);
    } else {
        const uint bits = floatBitsToUint(value);
        if (to_k) {
            kc[2 * element] = uint16_t(bits & 0xFFFFu);
            kc[2 * element + 1] = uint16_t(bits >> 16);
        } else {
            vc[2 * element] = uint16_t(bits & 0xFFFFu);
            vc[2 * element + 1] = uint16_t(bits >> 16);
        }
    }
}

void main() {
    const uint i = gl_GlobalInvocationID.x;
    const uint t = gl_GlobalInvocationID.y;
    if (i >= p.kv_dim || t >= p.n) return;
    const uint slot = uint(slots[t]);
    const uint block = slot / p.block_tokens;
    const uint offset = slot % p.block_tokens;
    const uint block_base = block * p.block_tokens * p.kv_dim;
    store(block_base + i * p.block_tokens + offset, k[t * p.kv_dim + i], true);
    store(block_base + offset * p.kv_dim + i, v[t * p.kv_dim + i], false);
}
