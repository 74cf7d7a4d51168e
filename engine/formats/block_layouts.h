#pragma once
// The byte layouts of ggml's block formats, as every kernel and backend reads them: bytes per
// block and the offsets of the fields a kernel addresses directly. engine/formats/quant_blocks.h
// holds the same layouts as structs and static_asserts that they agree with these numbers.
#include <cstdint>

namespace inferscope::block_layouts {

inline constexpr int64_t kLegacyElements = 32;  // elements per block of Q4_0 … Q8_1 and IQ4_NL
inline constexpr int64_t kSuperElements = 256;  // elements per super-block of the K-quants and IQ4_XS

// Bytes per block.
inline constexpr int64_t kQ4_0 = 18;     // d, qs[16]
inline constexpr int64_t kQ4_1 = 20;     // d, m, qs[16]
inline constexpr int64_t kQ5_0 = 22;     // d, qh[4], qs[16]
inline constexpr int64_t kQ5_1 = 24;     // d, m, qh[4], qs[16]
inline constexpr int64_t kQ8_0 = 34;     // d, qs[32]
inline constexpr int64_t kQ8_1 = 36;     // d, s, qs[32]
inline constexpr int64_t kQ2_K = 84;     // scales[16], qs[64], d, dmin
inline constexpr int64_t kQ3_K = 110;    // hmask[32], qs[64], scales[12], d
inline constexpr int64_t kQ4_K = 144;    // d, dmin, scales[12], qs[128]
inline constexpr int64_t kQ5_K = 176;    // d, dmin, scales[12], qh[32], qs[128]
inline constexpr int64_t kQ6_K = 210;    // ql[128], qh[64], scales[16], d
inline constexpr int64_t kQ8_K = 292;    // float d, qs[256], int16 bsums[16]
inline constexpr int64_t kIQ4_NL = 18;   // d, qs[16]
inline constexpr int64_t kIQ4_XS = 136;  // d, scales_h, scales_l[4], qs[128]

// Field offsets within a block.
inline constexpr int64_t kQ2_KD = 80;       // Q2_K's d (then dmin)
inline constexpr int64_t kQ3_KD = 108;      // Q3_K's d
inline constexpr int64_t kQ6_KD = 208;      // Q6_K's d
inline constexpr int64_t kQ8_KQs = 4;       // Q8_K's qs, after the float d
inline constexpr int64_t kQ8_KBsums = 260;  // Q8_K's bsums, after qs
inline constexpr int64_t kIQ4_XSQs = 8;     // IQ4_XS's qs

static_assert(kQ8_KQs + kSuperElements == kQ8_KBsums && kQ8_KBsums + 16 * 2 == kQ8_K);
static_assert(kQ4_0 == 2 + kLegacyElements / 2 && kQ8_0 == 2 + kLegacyElements);

}  // namespace inferscope::block_layouts
