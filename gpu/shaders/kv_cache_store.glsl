// RoPE's pairs and the paged KV cache's layout, shared by qkv_prepare.comp and the mat-vec's
// QKV_PREPARE build so that both rotate and store alike. The includer declares the caches as
// `uint16_t kc[]` and `uint16_t vc[]` (F16 values, or F32 values as two 16-bit halves).

// The elements rotated together by pair i of half_dim: (i, i + half_dim) in NeoX style, else (2i, 2i + 1).
uvec2 rope_pair(uint i, uint half_dim, bool neox) { return neox ? uvec2(i, i + half_dim) : uvec2(2 * i, 2 * i + 1); }

// (a, b) rotated by the angle whose (cos, sin) is cs.
vec2 rotate_pair(float a, float b, vec2 cs) { return vec2(a * cs.x - b * cs.y, a * cs.y + b * cs.x); }

// Element i of a token's K or V row (kv_dim of them) stored at `slot` (block * block_tokens +
// offset). A block holds K transposed ([kv_dim x block_tokens]: attention reads neighbouring
// positions side by side) and V by rows ([block_tokens x kv_dim]).
void store_kv(uint slot, uint i, uint kv_dim, uint block_tokens, float value, bool to_k, bool f16) {
    const uint block_base = (slot / block_tokens) * block_tokens * kv_dim;
    const uint offset = slot % block_tokens;
    const uint element = block_base + (to_k ? i * block_tokens + offset : offset * kv_dim + i);
    if (f16) {
        const uint bits = f16_bits(value);
        if (to_k) kc[element] = uint16_t(bits); else vc[element] = uint16_t(bits);
        return;
    }
    const uint bits = floatBitsToUint(value);
    if (to_k) {
        kc[2 * element] = uint16_t(bits & 0xFFFFu);
        kc[2 * element + 1] = uint16_t(bits >> 16);
    } else {
        vc[2 * element] = uint16_t(bits & 0xFFFFu);
        vc[2 * element + 1] = uint16_t(bits >> 16);
    }
}
