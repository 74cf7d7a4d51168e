// Reading GGUF weight rows in their block format from a buffer of 16-bit words, for the
// products and the embedding gather. WEIGHT_TYPE is a specialization constant numbered as in
// weight_layout.glsl. Expects `w` (uint16_t[]) to be declared by the including shader.
#include "weight_layout.glsl"
#define WORDS w
#define OCTET weight_octet
#include "weight_octets.glsl"
#undef WORDS
#undef OCTET

float half_at(uint word) { return unpackHalf2x16(uint(w[word])).x; }

int int8_at(uint word, uint high) {
    const uint v = uint(w[word]);
    return int((high != 0 ? v >> 8 : v) << 24) >> 24;
}

// Element e of the row starting at word `row`.
float weight_at(uint row, uint e) {
    if (WEIGHT_TYPE == WT_F32) return uintBitsToFloat(uint(w[row + 2 * e]) | (uint(w[row + 2 * e + 1]) << 16));
    if (WEIGHT_TYPE == WT_F16) return half_at(row + e);
    if (WEIGHT_TYPE == WT_BF16) return uintBitsToFloat(uint(w[row + e]) << 16);
    if (WEIGHT_TYPE != WT_Q8_0 && WEIGHT_TYPE != WT_Q4_0) {
        float v[8];
        weight_octet(row, e / 8, v);
        return v[e % 8];
    }
    const uint block = e / 32;
    const uint j = e % 32;
    if (WEIGHT_TYPE == WT_Q8_0) {
        const uint base = row + block * 17;
        return half_at(base) * float(int8_at(base + 1 + j / 2, j % 2));
    }
    const uint base = row + block * 9;
    const uint byte_index = j % 16;
    const uint byte_value = (uint(w[base + 1 + byte_index / 2]) >> (8 * (byte_index % 2))) & 0xFFu;
    const uint nibble = j < 16 ? byte_value & 0xFu : byte_value >> 4;
    return half_at(base) * float(int(nibble) - 8);
}

// The (scale, minimum) of each 16-element half of 32-element group g of a block-format row, as
// weight_octets.glsl's GROUP_SCALES gives them (Q8_0 and Q4_0: (d, 0) twice).
vec4 weight_group_scales(uint row, uint g) {
    if (WEIGHT_TYPE == WT_Q8_0 || WEIGHT_TYPE == WT_Q4_0) {
        const float d = half_at(row + g * (WEIGHT_TYPE == WT_Q8_0 ? 17 : 9));
        return vec4(d, 0.0, d, 0.0);
    }
    return weight_octet_group_scales(row, g);
}

// The integer codes (as floats) of elements 8c .. 8c+7 of a block-format row, before their
// group's scale and minimum: the int8 of Q8_0, q - 8 of Q4_0, and for the others their octet
// with scale 1 and minimum 0 (q - 16 of Q5_0, q of Q4_1 and Q5_1, the level of IQ4_NL and
// IQ4_XS, a K-quant's value before its sub-block's scale and minimum).
void weight_chunk_codes(uint row, uint c, out float v[8]) {
    if (WEIGHT_TYPE == WT_Q8_0) {
        const uint q = row + (c / 4) * 17 + 1 + (c % 4) * 4;
        for (uint i = 0; i < 4; ++i) {
            v[2 * i] = float(int8_at(q + i, 0));
            v[2 * i + 1] = float(int8_at(q + i, 1));
        }
    } else if (WEIGHT_TYPE == WT_Q4_0) {
        const uint sub = c % 4;              // which 8 of the block's 32 elements
        const uint shift = sub < 2 ? 0 : 4;  // low nibbles hold elements 0..15
        const uint q = row + (c / 4) * 9 + 1 + (sub % 2) * 4;
        for (uint i = 0; i < 4; ++i) {
            const uint word = uint(w[q + i]);
            v[2 * i] = float(int((word >> shift) & 0xFu) - 8);
            v[2 * i + 1] = float(int((word >> (8 + shift)) & 0xFu) - 8);
        }
    } else {
        weight_octet_scaled(row, c, vec2(1.0, 0.0), v);
    }
}

// Elements 8c .. 8c+7 of the row (c: chunk index); elements at or past `cols` read as 0.
// Quantized rows always hold whole blocks, so a chunk never straddles a block.
void weight_chunk(uint row, uint c, uint cols, out float v[8]) {
    if (WEIGHT_TYPE == WT_Q8_0 || WEIGHT_TYPE == WT_Q4_0) {
        weight_chunk_codes(row, c, v);
        const float d = weight_group_scales(row, c / 4).x;
        for (uint i = 0; i < 8; ++i) v[i] *= d;
        return;
    }
    if (BLOCK_TYPE) {
        weight_octet(row, c, v);
        return;
    }
    for (uint i = 0; i < 8; ++i) {
        const uint e = c * 8 + i;
        v[i] = e < cols ? weight_at(row, e) : 0.0;
    }
}
