// The GGUF weight formats the shaders read in place, as WEIGHT_TYPE (a specialization
// constant: the includer's format) numbers them, and how many 16-bit words a row of each takes. Every block size
// here is a whole number of words, so a row starts on a word boundary.
const uint WT_F32 = 0;
const uint WT_F16 = 1;
const uint WT_Q8_0 = 2;    // 32: F16 scale, 32 int8                                 17 words
const uint WT_Q4_0 = 3;    // 32: F16 scale, 16 bytes of nibbles (offset 8)           9 words
const uint WT_BF16 = 4;
const uint WT_Q4_1 = 5;    // 32: F16 scale and min, 16 bytes of nibbles              10 words
const uint WT_Q5_0 = 6;    // 32: F16 scale, 32 fifth bits, nibbles (offset 16)        11 words
const uint WT_Q5_1 = 7;    // 32: F16 scale and min, 32 fifth bits, nibbles           12 words
const uint WT_IQ4_NL = 8;  // 32: F16 scale, nibbles indexing 16 levels               9 words
const uint WT_Q4_K = 9;    // 256: F16 scale and min, 12 bytes of 6-bit sub-scales, nibbles    72 words
const uint WT_Q5_K = 10;   // 256: as Q4_K plus 32 bytes of fifth bits                          88 words
const uint WT_Q6_K = 11;   // 256: low nibbles, 2-bit highs, 16 int8 sub-scales, F16 scale     105 words
const uint WT_IQ4_XS = 12; // 256: F16 scale, 6-bit sub-scales, nibbles indexing 16 levels      68 words
const uint WT_Q2_K = 13;   // 256: 4-bit sub-scales and mins, 2-bit values, F16 scale and min   42 words
const uint WT_Q3_K = 14;   // 256: high bits, 2-bit values, 6-bit sub-scales, F16 scale         55 words

#include "f16.glsl"

// The input of a product as the CPU (and llama.cpp) multiplies it by `type` weights: rounded to
// F16 for F16 weights and to BF16 for BF16 ones; as it is for the others (whose encodings, where
// the dispatch encodes, follow below).
vec4 input_for_format(uint type, vec4 x) {
    if (type == WT_F16) return round4_to_f16(x);
    if (type == WT_BF16) return round4_to_bf16(x);
    return x;
}

// F32, F16 and BF16 hold one value per element; every other format, blocks of 32 or 256.
bool block_format(uint type) { return type != WT_F32 && type != WT_F16 && type != WT_BF16; }
const bool BLOCK_TYPE = WEIGHT_TYPE != WT_F32 && WEIGHT_TYPE != WT_F16 && WEIGHT_TYPE != WT_BF16;
// How the CPU encodes the input of each block format: Q8_K for the formats of 256-element
// blocks, Q8_1 (Q8_0 with the scaled sum of its codes) for those with a minimum, Q8_0 otherwise.
// A shader whose dispatch reads matrices of three formats (matvec.comp) defines
// INPUT_FOR_THREE_FORMATS: its input is then Q8_1 where any of them has a minimum, which serves
// its Q8_0 ones too (the same codes and scale).
// (Bit masks of the formats, as glslc's optimizer fails on a chain of || between specialization constants.)
const uint WITH_MINIMUM_MASK = (1u << WT_Q4_1) | (1u << WT_Q5_1);
const bool Q8_K_INPUT = WEIGHT_TYPE >= WT_Q4_K;
#ifdef INPUT_FOR_THREE_FORMATS
const bool Q8_1_INPUT = (((1u << WEIGHT_TYPE) | (1u << WEIGHT_TYPE_1) | (1u << WEIGHT_TYPE_2)) & WITH_MINIMUM_MASK) != 0u;
#else
const bool Q8_1_INPUT = ((1u << WEIGHT_TYPE) & WITH_MINIMUM_MASK) != 0u;
#endif

// The 32-element formats other than Q8_0 and Q4_0, which weight_octets.glsl decodes alike.
bool block_of_32(uint type) { return type == WT_Q4_1 || type == WT_Q5_0 || type == WT_Q5_1 || type == WT_IQ4_NL; }
bool block_with_min(uint type) { return ((1u << type) & WITH_MINIMUM_MASK) != 0u; }
bool block_fifth_bits(uint type) { return type == WT_Q5_0 || type == WT_Q5_1; }
// Words per block of the 32-element formats.
uint block_words(uint type) { return type == WT_Q4_1 ? 10 : type == WT_Q5_0 ? 11 : type == WT_Q5_1 ? 12 : 9; }

uint format_row_words(uint type, uint cols) {
    switch (type) {
        case WT_F32: return cols * 2;
        case WT_F16:
        case WT_BF16: return cols;
        case WT_Q8_0: return cols / 32 * 17;
        case WT_Q4_0:
        case WT_IQ4_NL: return cols / 32 * 9;
        case WT_Q4_1: return cols / 32 * 10;
        case WT_Q5_0: return cols / 32 * 11;
        case WT_Q5_1: return cols / 32 * 12;
        case WT_Q4_K: return cols / 256 * 72;
        case WT_Q5_K: return cols / 256 * 88;
        case WT_Q6_K: return cols / 256 * 105;
        case WT_Q2_K: return cols / 256 * 42;
        case WT_Q3_K: return cols / 256 * 55;
        default: return cols / 256 * 68;  // IQ4_XS
    }
}
uint row_words(uint cols) { return format_row_words(WEIGHT_TYPE, cols); }

// IQ4_NL's and IQ4_XS's sixteen levels (ggml's kvalues_iq4nl).
const float IQ4_LEVELS[16] = float[16](-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
float iq4_level(uint q) { return IQ4_LEVELS[q]; }

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block, from bytes j % 4,
// j % 4 + 4 and j % 4 + 8 of its 12 packed scale bytes.
uvec2 k4_scale_min(uint j, uint a, uint b, uint c) {
    if (j < 4) return uvec2(a & 63u, b & 63u);
    return uvec2((c & 0xFu) | ((a >> 6) << 4), (c >> 4) | ((b >> 6) << 4));
}
