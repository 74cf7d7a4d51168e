// One unit of work of a weight row against every token: 8 elements for F32/F16/BF16, 32 for
// the block formats (one Q8_0/Q4_0 block; four octets of the others), the scales read once.
// acc[base + t] += the unit's part of dot(W[row], x^[t]). Included by matvec.comp once per
// weight binding, with W16 (the buffer as 16-bit words), W4 (the same buffer as uvec4), UNIT
// and OCTET (the functions' names) and UNIT_TYPE (the binding's format) defined.
#define WORDS W16
#define OCTET_TYPE UNIT_TYPE
#include "weight_octets.glsl"
#undef WORDS
#undef OCTET_TYPE

// The 32 codes of group u of a row, as integers in F32: q - 16 for Q5_0, q for Q4_1 and Q5_1,
// the level for IQ4_NL and IQ4_XS, and for the K-quants the value before its sub-block's scale
// and minimum.
void BLOCK_CODES(uint row_word, uint u, out vec4 codes[8]) {
    for (uint q = 0; q < 4; ++q) {
        float v[8];
        OCTET_SCALED(row_word, u * 4 + q, vec2(1.0, 0.0), v);
        codes[2 * q] = vec4(v[0], v[1], v[2], v[3]);
        codes[2 * q + 1] = vec4(v[4], v[5], v[6], v[7]);
    }
}

// The parts of UNIT, one per way of reading a unit; named after UNIT, as this file is included once per binding.
#define UNIT_CODE_PRODUCTS PASTE(UNIT, _code_products)
#define UNIT_Q4_0 PASTE(UNIT, _q4_0)
#define UNIT_Q8_0 PASTE(UNIT, _q8_0)
#define UNIT_BLOCK PASTE(UNIT, _block)
#define UNIT_FLOATS PASTE(UNIT, _floats)

#if INTEGER_DOT
// The block's 32 weight codes as bytes, in the input's element order, and its scale, against
// every token's encoded group u (add_code_products).
void UNIT_CODE_PRODUCTS(uint row, uint u, uint base, inout float acc[ACC]) {
    if (UNIT_TYPE == WT_Q4_0) {  // the nibbles; their offset of 8 is taken off the sum
        const uint b = (row * (p.cols / 32) + u) * 9;
        uint words[8];
        for (uint q = 0; q < 4; ++q) {
            const uint bytes = uint(W16[b + 1 + 2 * q]) | (uint(W16[b + 2 + 2 * q]) << 16);
            words[q] = bytes & 0x0F0F0F0Fu;  // elements 4q .. 4q + 3
            words[4 + q] = (bytes >> 4) & 0x0F0F0F0Fu;  // elements 16 + 4q ..
        }
        const float d = unpackHalf2x16(uint(W16[b])).x;
        add_code_products(u, false, vec4(d, 0.0, d, 0.0), words, -8, base, acc);
    } else if (UNIT_TYPE == WT_Q8_0) {
        const uint b = (row * (p.cols / 32) + u) * 17;
        uint words[8];
        for (uint q = 0; q < 8; ++q) words[q] = uint(W16[b + 1 + 2 * q]) | (uint(W16[b + 2 + 2 * q]) << 16);
        const float d = unpackHalf2x16(uint(W16[b])).x;
        add_code_products(u, false, vec4(d, 0.0, d, 0.0), words, 0, base, acc);
    } else if (block_format(UNIT_TYPE)) {  // codes unpacked to bytes (BLOCK_CODES)
        const uint row_word = row * format_row_words(UNIT_TYPE, p.cols);
        const vec4 scales = GROUP_SCALES(row_word, u);
        vec4 codes[8];
        BLOCK_CODES(row_word, u, codes);
        uint words[8];
        for (uint q = 0; q < 8; ++q) words[q] = pack_i8x4(codes[q]);
        add_code_products(u, block_with_min(UNIT_TYPE), scales, words, 0, base, acc);
    }
}
#endif

// Q4_0: byte j holds element j (low nibble) and j + 16 (high), offset by 8.
void UNIT_Q4_0(uint row, uint u, uint base, inout float acc[ACC]) {
    const uint b = (row * (p.cols / 32) + u) * 9;
    const float d = unpackHalf2x16(uint(W16[b])).x;
    vec4 low[4], high[4];
    for (uint q = 0; q < 4; ++q) {
        const uint bytes = uint(W16[b + 1 + 2 * q]) | (uint(W16[b + 2 + 2 * q]) << 16);
        low[q] = vec4(uvec4(bytes, bytes >> 8, bytes >> 16, bytes >> 24) & 0xFu) - 8.0;
        high[q] = vec4(uvec4(bytes >> 4, bytes >> 12, bytes >> 20, bytes >> 28) & 0xFu) - 8.0;
    }
    for (uint t = 0; t < TOKENS; ++t) {
        if (ENCODE_INPUT) {
            add_encoded_products(t, u, false, vec4(d, 0.0, d, 0.0),
                                 vec4[8](low[0], low[1], low[2], low[3], high[0], high[1], high[2], high[3]), base, acc);
            continue;
        }
        float s = 0.0;
        for (uint q = 0; q < 4; ++q) s += dot(low[q], x_at(t, u * 32 + 4 * q)) + dot(high[q], x_at(t, u * 32 + 16 + 4 * q));
        acc[base + t] += d * s;
    }
}

// Q8_0: 32 int8 after the scale.
void UNIT_Q8_0(uint row, uint u, uint base, inout float acc[ACC]) {
    const uint b = (row * (p.cols / 32) + u) * 17;
    const float d = unpackHalf2x16(uint(W16[b])).x;
    vec4 q8[8];
    for (uint q = 0; q < 8; ++q) {
        const int bytes = int(uint(W16[b + 1 + 2 * q]) | (uint(W16[b + 2 + 2 * q]) << 16));
        q8[q] = vec4(bitfieldExtract(bytes, 0, 8), bitfieldExtract(bytes, 8, 8), bitfieldExtract(bytes, 16, 8),
                     bitfieldExtract(bytes, 24, 8));
    }
    for (uint t = 0; t < TOKENS; ++t) {
        if (ENCODE_INPUT) {
            add_encoded_products(t, u, false, vec4(d, 0.0, d, 0.0), q8, base, acc);
            continue;
        }
        float s = 0.0;
        for (uint q = 0; q < 8; ++q) s += dot(q8[q], x_at(t, u * 32 + 4 * q));
        acc[base + t] += d * s;
    }
}

// The other block formats: integer codes and the CPU's block sums where the input is encoded,
// else each octet dequantized with its half's scale and minimum.
void UNIT_BLOCK(uint row, uint u, uint base, inout float acc[ACC]) {
    const uint row_word = row * format_row_words(UNIT_TYPE, p.cols);
    const vec4 scales = GROUP_SCALES(row_word, u);
    if (ENCODE_INPUT) {
        vec4 codes[8];
        BLOCK_CODES(row_word, u, codes);
        for (uint t = 0; t < TOKENS; ++t) add_encoded_products(t, u, block_with_min(UNIT_TYPE), scales, codes, base, acc);
        return;
    }
    for (uint q = 0; q < 4; ++q) {
        float v[8];
        OCTET_SCALED(row_word, u * 4 + q, q < 2 ? scales.xy : scales.zw, v);
        const vec4 lo = vec4(v[0], v[1], v[2], v[3]);
        const vec4 hi = vec4(v[4], v[5], v[6], v[7]);
        for (uint t = 0; t < TOKENS; ++t) acc[base + t] += dot(lo, x_at(t, u * 32 + 8 * q)) + dot(hi, x_at(t, u * 32 + 8 * q + 4));
    }
}

// Elements 8u .. 8u+7 of an F32, F16 or BF16 row as two vec4.
void UNIT_FLOATS(uint row, uint u, out vec4 lo, out vec4 hi) {
    if (ALIGNED && UNIT_TYPE == WT_F16) {
        const uvec4 v = W4[row * (p.cols / 8) + u];
        lo = vec4(unpackHalf2x16(v.x), unpackHalf2x16(v.y));
        hi = vec4(unpackHalf2x16(v.z), unpackHalf2x16(v.w));
    } else if (ALIGNED && UNIT_TYPE == WT_BF16) {
        const uvec4 v = W4[row * (p.cols / 8) + u];
        lo = uintBitsToFloat(uvec4(v.x << 16, v.x & 0xFFFF0000u, v.y << 16, v.y & 0xFFFF0000u));
        hi = uintBitsToFloat(uvec4(v.z << 16, v.z & 0xFFFF0000u, v.w << 16, v.w & 0xFFFF0000u));
    } else if (ALIGNED) {
        lo = uintBitsToFloat(W4[row * (p.cols / 4) + 2 * u]);
        hi = uintBitsToFloat(W4[row * (p.cols / 4) + 2 * u + 1]);
    } else {  // rows not 16-byte aligned: element by element, zero past the row's end
        float v[8];
        for (uint i = 0; i < 8; ++i) {
            const uint e = u * 8 + i;
            if (e >= p.cols) {
                v[i] = 0.0;
            } else if (UNIT_TYPE == WT_F16) {
                v[i] = unpackHalf2x16(uint(W16[row * p.cols + e])).x;
            } else if (UNIT_TYPE == WT_BF16) {
                v[i] = uintBitsToFloat(uint(W16[row * p.cols + e]) << 16);
            } else {
                const uint at = (row * p.cols + e) * 2;
                v[i] = uintBitsToFloat(uint(W16[at]) | (uint(W16[at + 1]) << 16));
            }
        }
        lo = vec4(v[0], v[1], v[2], v[3]);
        hi = vec4(v[4], v[5], v[6], v[7]);
    }
}

void UNIT(uint row, uint u, uint base, inout float acc[ACC]) {
#if INTEGER_DOT
    UNIT_CODE_PRODUCTS(row, u, base, acc);
    return;
#endif
    if (UNIT_TYPE == WT_Q4_0) {
        UNIT_Q4_0(row, u, base, acc);
    } else if (UNIT_TYPE == WT_Q8_0) {
        UNIT_Q8_0(row, u, base, acc);
    } else if (block_format(UNIT_TYPE)) {
        UNIT_BLOCK(row, u, base, acc);
    } else {
        vec4 lo, hi;
        UNIT_FLOATS(row, u, lo, hi);
        // Float formats share a dispatch only with their own, so WEIGHT_TYPE is UNIT_TYPE here.
        for (uint t = 0; t < TOKENS; ++t) {
            acc[base + t] += dot(lo, float_weights_input(t, u * 8)) + dot(hi, float_weights_input(t, u * 8 + 4));
        }
    }
}

#undef UNIT_CODE_PRODUCTS
#undef UNIT_Q4_0
#undef UNIT_Q8_0
#undef UNIT_BLOCK
#undef UNIT_FLOATS
