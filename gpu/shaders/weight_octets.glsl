// Dequantizing 8 consecutive elements of a row of a block format other than Q8_0 and Q4_0
// (weight_layout.glsl numbers them), read in place from a buffer of 16-bit words. Included
// once per weight binding with WORDS (the uint16_t[] array) and OCTET (the function's name)
// defined, and OCTET_TYPE (the binding's format; WEIGHT_TYPE where not defined); needs
// weight_layout.glsl.
//
// OCTET(row, c, v): v = elements 8c .. 8c+7 of the row that starts at word `row`. An octet
// never straddles a block or a 16-element half of a 32-element group, and its quantized bytes
// are 8 consecutive bytes that start on a multiple of 8 within the block's byte arrays, i.e.
// four whole words.
// OCTET_group_scales(row, g): the (scale, min) of elements 32g .. 32g+15 in .xy and of
// 32g+16 .. 32g+31 in .zw (Q2_K, Q3_K and Q6_K scale 16 elements at a time; the others repeat
// one pair). OCTET_scaled(row, c, scale_min, v): OCTET with its half's pair given, so that a
// product reading a whole group decodes its scales once instead of once per octet.

#define HALF_AT(word) unpackHalf2x16(uint(WORDS[word])).x
#define BYTE_AT(word, i) ((uint(WORDS[(word) + (i) / 2]) >> (8 * ((i) % 2))) & 0xFFu)
#define U32_AT(word) (uint(WORDS[word]) | (uint(WORDS[(word) + 1]) << 16))
#ifndef GROUP_SCALES
#define PASTE_TOKENS(a, b) a##b
#define PASTE(a, b) PASTE_TOKENS(a, b)
#define GROUP_SCALES PASTE(OCTET, _group_scales)
#define OCTET_SCALED PASTE(OCTET, _scaled)
#define Q3K_SCALE PASTE(OCTET, _q3k_scale)
#define BLOCK_CODES PASTE(OCTET, _block_codes)
#endif

#ifndef OCTET_TYPE
#define OCTET_TYPE WEIGHT_TYPE
#endif

// The 6-bit scale of sub-block `sub` (0..15) of the Q3_K block at word `base`, times its F16 scale.
float Q3K_SCALE(uint base, uint sub) {
    const uint low = sub < 8 ? BYTE_AT(base + 48, sub) & 0xFu : BYTE_AT(base + 48, sub - 8) >> 4;
    const uint high = (BYTE_AT(base + 48, 8 + sub % 4) >> (2 * (sub / 4))) & 3u;
    return HALF_AT(base + 54) * float(int(low | (high << 4)) - 32);
}

vec4 GROUP_SCALES(uint row, uint g) {
    if (block_of_32(OCTET_TYPE)) {
        const uint base = row + g * block_words(OCTET_TYPE);
        const float d = HALF_AT(base);
        const float m = block_with_min(OCTET_TYPE) ? HALF_AT(base + 1) : 0.0;
        return vec4(d, m, d, m);
    }
    const uint block = g / 8;
    const uint j = g % 8;  // the group in its 256-element block
    if (OCTET_TYPE == WT_Q4_K || OCTET_TYPE == WT_Q5_K) {
        const uint base = row + block * (OCTET_TYPE == WT_Q5_K ? 88 : 72);
        const uvec2 sm = k4_scale_min(j, BYTE_AT(base + 2, j % 4), BYTE_AT(base + 2, j % 4 + 4), BYTE_AT(base + 2, j % 4 + 8));
        const float scale = HALF_AT(base) * float(sm.x);
        const float min = HALF_AT(base + 1) * float(sm.y);
        return vec4(scale, min, scale, min);
    }
    // Q6_K, Q3_K and Q2_K: group j is 32k + l of half j / 4 (k = j % 4), whose two 16-element
    // sub-blocks are 8 half + 2k and the next.
    const uint sub = 8 * (j / 4) + 2 * (j % 4);
    if (OCTET_TYPE == WT_Q6_K) {
        const uint base = row + block * 105;
        const float d = HALF_AT(base + 104);
        const uint both = uint(WORDS[base + 96 + sub / 2]);
        return vec4(d * float(int(both << 24) >> 24), 0.0, d * float(int(both << 16) >> 24), 0.0);
    }
    if (OCTET_TYPE == WT_Q3_K) {
        const uint base = row + block * 55;
        return vec4(Q3K_SCALE(base, sub), 0.0, Q3K_SCALE(base, sub + 1), 0.0);
    }
    if (OCTET_TYPE == WT_Q2_K) {
        const uint base = row + block * 42;
        const float d = HALF_AT(base + 40);
        const float dmin = HALF_AT(base + 41);
        const uint both = uint(WORDS[base + sub / 2]);
        const uint first = both & 0xFFu, second = both >> 8;
        return vec4(d * float(first & 0xFu), dmin * float(first >> 4), d * float(second & 0xFu), dmin * float(second >> 4));
    }
    // IQ4_XS: group j's 6-bit scale (offset 32) is a nibble of scales_l and two bits of scales_h.
    const uint base = row + block * 68;
    const uint scale_bits = ((BYTE_AT(base + 2, j / 2) >> (4 * (j % 2))) & 0xFu) | (((uint(WORDS[base + 1]) >> (2 * j)) & 3u) << 4);
    const float d = HALF_AT(base) * float(int(scale_bits) - 32);
    return vec4(d, 0.0, d, 0.0);
}

// OCTET_SCALED's parts, one per family of formats.
#define OCTET_OF_32 PASTE(OCTET, _of_32)
#define OCTET_Q45_K PASTE(OCTET, _q45_k)
#define OCTET_Q6_K PASTE(OCTET, _q6_k)
#define OCTET_Q23_K PASTE(OCTET, _q23_k)
#define OCTET_IQ4_XS PASTE(OCTET, _iq4_xs)

// Q4_1, Q5_0, Q5_1, IQ4_NL: byte j of the nibbles holds element j (low) and j + 16 (high).
void OCTET_OF_32(uint row, uint c, float scale, float min, out float v[8]) {
    const uint base = row + (c / 4) * block_words(OCTET_TYPE);
    const uint j0 = (c % 4) * 8;  // the octet's first element in the block
    const uint high_bits = block_fifth_bits(OCTET_TYPE) ? U32_AT(base + (block_with_min(OCTET_TYPE) ? 2 : 1)) : 0u;
    const uint qs = base + (block_with_min(OCTET_TYPE) ? 2 : 1) + (block_fifth_bits(OCTET_TYPE) ? 2 : 0);
    const uvec2 bytes = uvec2(U32_AT(qs + (j0 % 16) / 2), U32_AT(qs + (j0 % 16) / 2 + 2));
    for (uint i = 0; i < 8; ++i) {
        const uint byte_value = (bytes[i / 4] >> (8 * (i % 4))) & 0xFFu;
        uint q = j0 < 16 ? byte_value & 0xFu : byte_value >> 4;
        if (block_fifth_bits(OCTET_TYPE)) q |= ((high_bits >> (j0 + i)) & 1u) << 4;
        if (OCTET_TYPE == WT_IQ4_NL) {
            v[i] = scale * iq4_level(q);
        } else if (OCTET_TYPE == WT_Q5_0) {
            v[i] = scale * float(int(q) - 16);
        } else {
            precise float value = scale * float(q) + min;  // unfused, as the CPU's dequantization rounds
            v[i] = value;
        }
    }
}

// Q4_K, Q5_K: sub-block j (32 elements) is the low nibbles of bytes 32(j/2).. for even j, the
// high nibbles for odd j; Q5_K's fifth bit of element l of sub-block j is bit j of qh[l].
// e0: the octet's first element in the 256-element block.
void OCTET_Q45_K(uint row, uint block, uint e0, float scale, float min, out float v[8]) {
    const bool q5 = OCTET_TYPE == WT_Q5_K;
    const uint base = row + block * (q5 ? 88 : 72);
    const uint j = e0 / 32, l0 = e0 % 32;
    const uint qs = base + (q5 ? 24 : 8) + (32 * (j / 2) + l0) / 2;
    const uvec2 bytes = uvec2(U32_AT(qs), U32_AT(qs + 2));
    const uvec2 highs = q5 ? uvec2(U32_AT(base + 8 + l0 / 2), U32_AT(base + 10 + l0 / 2)) : uvec2(0);
    for (uint i = 0; i < 8; ++i) {
        const uint byte_value = (bytes[i / 4] >> (8 * (i % 4))) & 0xFFu;
        uint q = j % 2 == 0 ? byte_value & 0xFu : byte_value >> 4;
        if (q5) q += ((highs[i / 4] >> (8 * (i % 4) + j)) & 1u) << 4;
        precise float value = scale * float(q) - min;  // unfused, as the CPU's dequantization rounds
        v[i] = value;
    }
}

// Q6_K: each half of the block (128 elements) has 64 bytes of low nibbles, 32 of 2-bit highs
// and 8 scales. Element 32k + l of a half: the low (k < 2) or high nibble of byte
// l + 32 (k % 2), bits 2k of high byte l.
void OCTET_Q6_K(uint row, uint block, uint e0, float scale, out float v[8]) {
    const uint half_index = e0 / 128, k = (e0 % 128) / 32, l0 = e0 % 32;
    const uint base = row + block * 105;
    const uint ql = base + (64 * half_index + l0 + 32 * (k % 2)) / 2;
    const uint qh = base + 64 + (32 * half_index + l0) / 2;
    const uvec2 lows = uvec2(U32_AT(ql), U32_AT(ql + 2));
    const uvec2 highs = uvec2(U32_AT(qh), U32_AT(qh + 2));
    for (uint i = 0; i < 8; ++i) {
        const uint low = (lows[i / 4] >> (8 * (i % 4) + (k < 2 ? 0 : 4))) & 0xFu;
        const uint high = (highs[i / 4] >> (8 * (i % 4) + 2 * k)) & 3u;
        v[i] = scale * float(int(low | (high << 4)) - 32);
    }
}

// Q2_K, Q3_K: each half of the block (128 elements) reads 32 bytes of 2-bit values four times:
// element 32k + l of a half is bits 2k of byte l. Q3_K subtracts 4 where bit 4 half + k of
// hmask byte l is clear.
void OCTET_Q23_K(uint row, uint block, uint e0, float scale, float min, out float v[8]) {
    const uint half_index = e0 / 128, k = (e0 % 128) / 32, l0 = e0 % 32;
    const bool q3 = OCTET_TYPE == WT_Q3_K;
    const uint base = row + block * (q3 ? 55 : 42);
    const uint qs = base + (q3 ? 16 : 8) + (32 * half_index + l0) / 2;
    const uvec2 bytes = uvec2(U32_AT(qs), U32_AT(qs + 2));
    if (q3) {
        const uvec2 hmask = uvec2(U32_AT(base + l0 / 2), U32_AT(base + l0 / 2 + 2));
        for (uint i = 0; i < 8; ++i) {
            const uint shift = 8 * (i % 4);
            const int q = int((bytes[i / 4] >> (shift + 2 * k)) & 3u) - (((hmask[i / 4] >> (shift + 4 * half_index + k)) & 1u) != 0 ? 0 : 4);
            v[i] = scale * float(q);
        }
    } else {
        for (uint i = 0; i < 8; ++i) {
            precise float value = scale * float((bytes[i / 4] >> (8 * (i % 4) + 2 * k)) & 3u) - min;
            v[i] = value;
        }
    }
}

// IQ4_XS: sub-block ib (32 elements) is bytes 16 ib .. 16 ib + 15 of the nibbles, like an
// IQ4_NL block.
void OCTET_IQ4_XS(uint row, uint block, uint e0, float scale, out float v[8]) {
    const uint base = row + block * 68;
    const uint ib = e0 / 32, l0 = e0 % 32;
    const uint qs = base + 4 + (16 * ib + l0 % 16) / 2;
    const uvec2 bytes = uvec2(U32_AT(qs), U32_AT(qs + 2));
    for (uint i = 0; i < 8; ++i) {
        const uint byte_value = (bytes[i / 4] >> (8 * (i % 4))) & 0xFFu;
        v[i] = scale * iq4_level(l0 < 16 ? byte_value & 0xFu : byte_value >> 4);
    }
}

void OCTET_SCALED(uint row, uint c, vec2 scale_min, out float v[8]) {
    const float scale = scale_min.x;
    const float min = scale_min.y;
    if (block_of_32(OCTET_TYPE)) {
        OCTET_OF_32(row, c, scale, min, v);
        return;
    }
    const uint block = c / 32;
    const uint e0 = (c % 32) * 8;  // the octet's first element in the 256-element block
    if (OCTET_TYPE == WT_Q4_K || OCTET_TYPE == WT_Q5_K) {
        OCTET_Q45_K(row, block, e0, scale, min, v);
    } else if (OCTET_TYPE == WT_Q6_K) {
        OCTET_Q6_K(row, block, e0, scale, v);
    } else if (OCTET_TYPE == WT_Q2_K || OCTET_TYPE == WT_Q3_K) {
        OCTET_Q23_K(row, block, e0, scale, min, v);
    } else {
        OCTET_IQ4_XS(row, block, e0, scale, v);
    }
}

void OCTET(uint row, uint c, out float v[8]) {
    const vec4 scales = GROUP_SCALES(row, c / 4);
    OCTET_SCALED(row, c, c % 4 < 2 ? scales.xy : scales.zw, v);
}

#undef HALF_AT
#undef BYTE_AT
#undef U32_AT
#undef OCTET_OF_32
#undef OCTET_Q45_K
#undef OCTET_Q6_K
#undef OCTET_Q23_K
#undef OCTET_IQ4_XS
