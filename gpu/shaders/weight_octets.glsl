// Dequantizing 8 consecutive elements of a row of a block format other than Q8_0 and Q4_0
// (weight_layout.glsl numbers them), read in place from a buffer of 16-bit words. Included
// once per weight binding with WORDS (the uint16_t[] array) and OCTET (the function's name)
// defined; needs weight_layout.glsl and WEIGHT_TYPE.
//
// OCTET(row, c, v): v = elements 8c .. 8c+7 of the row that starts at word `row`. An octet
// never straddles a block, and its quantized bytes are 8 consecutive bytes that start on a
// multiple of 8 within the block's byte arrays, i.e. four whole words.

#define HALF_AT(word) unpackHalf2x16(uint(WORDS[word])).x
#define BYTE_AT(word, i) ((uint(WORDS[(word) + (i) / 2]) >> (8 * ((i) % 2))) & 0xFFu)
#define U32_AT(word) (uint(WORDS[word]) | (uint(WORDS[(word) + 1]) << 16))

void OCTET(uint row, uint c, out float v[8]) {
    if (WEIGHT_TYPE == WT_Q4_1 || WEIGHT_TYPE == WT_Q5_0 || WEIGHT_TYPE == WT_Q5_1 || WEIGHT_TYPE == WT_IQ4_NL) {
        // 32-element blocks: byte j of the nibbles holds element j (low) and j + 16 (high).
        const uint words = WEIGHT_TYPE == WT_Q4_1 ? 10 : WEIGHT_TYPE == WT_Q5_0 ? 11 : WEIGHT_TYPE == WT_Q5_1 ? 12 : 9;
        const uint base = row + (c / 4) * words;
        const uint j0 = (c % 4) * 8;  // the octet's first element in the block
        const bool with_min = WEIGHT_TYPE == WT_Q4_1 || WEIGHT_TYPE == WT_Q5_1;
        const bool fifth_bits = WEIGHT_TYPE == WT_Q5_0 || WEIGHT_TYPE == WT_Q5_1;
        const float d = HALF_AT(base);
        const float m = with_min ? HALF_AT(base + 1) : 0.0;
        const uint high_bits = fifth_bits ? U32_AT(base + (with_min ? 2 : 1)) : 0u;
        const uint qs = base + (with_min ? 2 : 1) + (fifth_bits ? 2 : 0);
        const uvec2 bytes = uvec2(U32_AT(qs + (j0 % 16) / 2), U32_AT(qs + (j0 % 16) / 2 + 2));
        for (uint i = 0; i < 8; ++i) {
            const uint byte_value = (bytes[i / 4] >> (8 * (i % 4))) & 0xFFu;
            uint q = j0 < 16 ? byte_value & 0xFu : byte_value >> 4;
            if (fifth_bits) q |= ((high_bits >> (j0 + i)) & 1u) << 4;
            if (WEIGHT_TYPE == WT_IQ4_NL) {
                v[i] = d * iq4_level(q);
            } else if (WEIGHT_TYPE == WT_Q5_0) {
                v[i] = d * float(int(q) - 16);
            } else {
                precise float value = d * float(q) + m;  // unfused, as the CPU's dequantization rounds
                v[i] = value;
            }
        }
        return;
    }
    const uint block = c / 32;
    const uint e0 = (c % 32) * 8;  // the octet's first element in the 256-element block
    if (WEIGHT_TYPE == WT_Q4_K || WEIGHT_TYPE == WT_Q5_K) {
        // Sub-block j (32 elements) is the low nibbles of bytes 32(j/2).. for even j, the high
        // nibbles for odd j; Q5_K's fifth bit of element l of sub-block j is bit j of qh[l].
        const bool q5 = WEIGHT_TYPE == WT_Q5_K;
        const uint base = row + block * (q5 ? 88 : 72);
        const uint j = e0 / 32;
        const uint l0 = e0 % 32;
        const uvec2 sm = k4_scale_min(j, BYTE_AT(base + 2, j % 4), BYTE_AT(base + 2, j % 4 + 4), BYTE_AT(base + 2, j % 4 + 8));
        const float scale = HALF_AT(base) * float(sm.x);
        const float min = HALF_AT(base + 1) * float(sm.y);
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
        return;
    }
    if (WEIGHT_TYPE == WT_Q6_K) {
        // Each half of the block (128 elements): 64 bytes of low nibbles, 32 of 2-bit highs and
        // 8 scales. Element 32k + l of a half: the low (k < 2) or high nibble of byte
        // l + 32 (k % 2), bits 2k of high byte l, scale l / 16 + 2k.
        const uint base = row + block * 105;
        const uint half_index = e0 / 128;
        const uint k = (e0 % 128) / 32;
        const uint l0 = e0 % 32;
        const uint ql = base + (64 * half_index + l0 + 32 * (k % 2)) / 2;
        const uint qh = base + 64 + (32 * half_index + l0) / 2;
        const uvec2 lows = uvec2(U32_AT(ql), U32_AT(ql + 2));
        const uvec2 highs = uvec2(U32_AT(qh), U32_AT(qh + 2));
        const int sub_scale = int(BYTE_AT(base + 96, 8 * half_index + l0 / 16 + 2 * k) << 24) >> 24;
        const float scale = HALF_AT(base + 104) * float(sub_scale);
        for (uint i = 0; i < 8; ++i) {
            const uint low = (lows[i / 4] >> (8 * (i % 4) + (k < 2 ? 0 : 4))) & 0xFu;
            const uint high = (highs[i / 4] >> (8 * (i % 4) + 2 * k)) & 3u;
            v[i] = scale * float(int(low | (high << 4)) - 32);
        }
        return;
    }
    if (WEIGHT_TYPE == WT_Q2_K || WEIGHT_TYPE == WT_Q3_K) {
        // Each half of the block (128 elements) reads 32 bytes of 2-bit values four times:
        // element 32k + l of a half is bits 2k of byte l, with sub-scale 8 half + 2k + l / 16.
        // Q3_K subtracts 4 where bit 4 half + k of hmask byte l is clear.
        const bool q3 = WEIGHT_TYPE == WT_Q3_K;
        const uint base = row + block * (q3 ? 55 : 42);
        const uint half_index = e0 / 128;
        const uint k = (e0 % 128) / 32;
        const uint l0 = e0 % 32;
        const uint sub = 8 * half_index + 2 * k + l0 / 16;
        const uint qs = base + (q3 ? 16 : 8) + (32 * half_index + l0) / 2;
        const uvec2 bytes = uvec2(U32_AT(qs), U32_AT(qs + 2));
        if (q3) {
            const uint low = sub < 8 ? BYTE_AT(base + 48, sub) & 0xFu : BYTE_AT(base + 48, sub - 8) >> 4;
            const uint high = (BYTE_AT(base + 48, 8 + sub % 4) >> (2 * (sub / 4))) & 3u;
            const float scale = HALF_AT(base + 54) * float(int(low | (high << 4)) - 32);
            const uvec2 hmask = uvec2(U32_AT(base + l0 / 2), U32_AT(base + l0 / 2 + 2));
            for (uint i = 0; i < 8; ++i) {
                const uint shift = 8 * (i % 4);
                const int q = int((bytes[i / 4] >> (shift + 2 * k)) & 3u) - (((hmask[i / 4] >> (shift + 4 * half_index + k)) & 1u) != 0 ? 0 : 4);
                v[i] = scale * float(q);
            }
        } else {
            const uint sc = BYTE_AT(base, sub);
            const float scale = HALF_AT(base + 40) * float(sc & 0xFu);
            const float min = HALF_AT(base + 41) * float(sc >> 4);
            for (uint i = 0; i < 8; ++i) {
                precise float value = scale * float((bytes[i / 4] >> (8 * (i % 4) + 2 * k)) & 3u) - min;
                v[i] = value;
            }
        }
        return;
    }
    // IQ4_XS: sub-block ib (32 elements) is bytes 16 ib .. 16 ib + 15 of the nibbles, like an
    // IQ4_NL block; its 6-bit scale (offset 32) is a nibble of scales_l and two bits of scales_h.
    const uint base = row + block * 68;
    const uint ib = e0 / 32;
    const uint j0 = e0 % 32;
    const uint scale_bits = ((BYTE_AT(base + 2, ib / 2) >> (4 * (ib % 2))) & 0xFu) | (((uint(WORDS[base + 1]) >> (2 * ib)) & 3u) << 4);
    const float d = HALF_AT(base) * float(int(scale_bits) - 32);
    const uint qs = base + 4 + (16 * ib + j0 % 16) / 2;
    const uvec2 bytes = uvec2(U32_AT(qs), U32_AT(qs + 2));
    for (uint i = 0; i < 8; ++i) {
        const uint byte_value = (bytes[i / 4] >> (8 * (i % 4))) & 0xFFu;
        v[i] = d * iq4_level(j0 < 16 ? byte_value & 0xFu : byte_value >> 4);
    }
}

#undef HALF_AT
#undef BYTE_AT
#undef U32_AT
