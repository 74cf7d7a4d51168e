#pragma once
// Internal to engine/formats: the in-memory layouts of ggml's block formats (as in
// ggml-common.h) and the small numeric helpers shared by the quant_*.cpp files.
//
// Blocks are never accessed in place: rows come from mmapped files at arbitrary offsets, so
// each block is copied into (load_block) or out of (store_block) a properly aligned local
// struct with memcpy. That keeps every access aligned and free of aliasing questions; the
// copies are small and compilers turn them into plain loads.
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

// Bit-exactness with ggml depends on every float operation rounding once, as written: no
// contraction of a*b+c into a fused multiply-add. GCC contracts by default even in ISO C++
// mode whenever the target has FMA (-march=native, -mfma), so the files that implement the
// formats (the only ones that include this header) switch it off here.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace inferscope::quant_detail {

static_assert(std::endian::native == std::endian::little,
              "GGUF tensor data is little-endian; the block structs are read in host order");

inline constexpr int kQK = 32;    // elements per block of the legacy formats (Q4_0 .. Q8_1)
inline constexpr int kQK_K = 256;  // elements per super-block of the K-quants

struct BlockQ4_0 {
    uint16_t d;          // scale (f16)
    uint8_t qs[kQK / 2];  // element j in the low nibble of qs[j], element j+16 in the high one
};
struct BlockQ4_1 {
    uint16_t d, m;  // scale and minimum (f16)
    uint8_t qs[kQK / 2];
};
struct BlockQ5_0 {
    uint16_t d;
    uint8_t qh[4];  // bit j (little-endian u32) is the 5th bit of element j
    uint8_t qs[kQK / 2];
};
struct BlockQ5_1 {
    uint16_t d, m;
    uint8_t qh[4];
    uint8_t qs[kQK / 2];
};
struct BlockQ8_0 {
    uint16_t d;
    int8_t qs[kQK];
};
struct BlockQ8_1 {
    uint16_t d, s;  // scale, and d * sum(qs) (both f16)
    int8_t qs[kQK];
};
struct BlockQ2_K {
    uint8_t scales[kQK_K / 16];  // per 16 elements: low nibble scale, high nibble min
    uint8_t qs[kQK_K / 4];
    uint16_t d, dmin;
};
struct BlockQ3_K {
    uint8_t hmask[kQK_K / 8];
    uint8_t qs[kQK_K / 4];
    uint8_t scales[12];  // sixteen 6-bit scales, offset by 32
    uint16_t d;
};
struct BlockQ4_K {
    uint16_t d, dmin;
    uint8_t scales[12];  // eight 6-bit scales and eight 6-bit mins
    uint8_t qs[kQK_K / 2];
};
struct BlockQ5_K {
    uint16_t d, dmin;
    uint8_t scales[12];
    uint8_t qh[kQK_K / 8];
    uint8_t qs[kQK_K / 2];
};
struct BlockQ6_K {
    uint8_t ql[kQK_K / 2];
    uint8_t qh[kQK_K / 4];
    int8_t scales[kQK_K / 16];
    uint16_t d;
};
struct BlockQ8_K {
    float d;
    int8_t qs[kQK_K];
    int16_t bsums[kQK_K / 16];  // sums of qs in groups of 16
};
// The 4-bit non-linear formats: each nibble indexes kIQ4NLValues (element j of a 32-element
// group in the low nibble of qs[j], element j+16 in the high one, as in Q4_0).
struct BlockIQ4_NL {
    uint16_t d;  // f16: element = d * kIQ4NLValues[nibble]
    uint8_t qs[kQK / 2];
};
struct BlockIQ4_XS {
    uint16_t d;                  // f16 super-block scale
    uint16_t scales_h;           // bits 2j, 2j+1: the high two bits of sub-block j's scale
    uint8_t scales_l[kQK_K / 64];  // low nibble: even sub-block's low 4 bits; high nibble: odd's
    uint8_t qs[kQK_K / 2];       // eight 32-element groups of 16 bytes
};

// The structs are the layouts the kernels read by offset (engine/formats/block_layouts.h).
namespace bl = block_layouts;
static_assert(kQK == bl::kLegacyElements && kQK_K == bl::kSuperElements);
static_assert(sizeof(BlockQ4_0) == bl::kQ4_0 && sizeof(BlockQ4_1) == bl::kQ4_1 && sizeof(BlockQ5_0) == bl::kQ5_0);
static_assert(sizeof(BlockQ5_1) == bl::kQ5_1 && sizeof(BlockQ8_0) == bl::kQ8_0 && sizeof(BlockQ8_1) == bl::kQ8_1);
static_assert(sizeof(BlockQ2_K) == bl::kQ2_K && sizeof(BlockQ3_K) == bl::kQ3_K && sizeof(BlockQ4_K) == bl::kQ4_K);
static_assert(sizeof(BlockQ5_K) == bl::kQ5_K && sizeof(BlockQ6_K) == bl::kQ6_K && sizeof(BlockQ8_K) == bl::kQ8_K);
static_assert(offsetof(BlockQ2_K, d) == bl::kQ2_KD && offsetof(BlockQ3_K, d) == bl::kQ3_KD);
static_assert(offsetof(BlockQ6_K, d) == bl::kQ6_KD && offsetof(BlockQ8_K, qs) == bl::kQ8_KQs);
static_assert(offsetof(BlockQ8_K, bsums) == bl::kQ8_KBsums);
static_assert(sizeof(BlockIQ4_NL) == bl::kIQ4_NL && sizeof(BlockIQ4_XS) == bl::kIQ4_XS);
static_assert(offsetof(BlockIQ4_XS, qs) == bl::kIQ4_XSQs);

// The signed scale (-32..31) of sub-block j (0..7) of an IQ4_XS block: 6 bits, offset by 32.
inline int iq4xs_scale(const BlockIQ4_XS& b, int j) {
    const int low = (b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF;
    const int high = (b.scales_h >> (2 * j)) & 3;
    return (low | (high << 4)) - 32;
}

template <class Block>
inline Block load_block(const uint8_t* row, int64_t index) {
    static_assert(std::is_trivially_copyable_v<Block>);
    Block block;
    std::memcpy(&block, row + index * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
    return block;
}

template <class Block>
inline void store_block(uint8_t* row, int64_t index, const Block& block) {
    std::memcpy(row + index * static_cast<int64_t>(sizeof(Block)), &block, sizeof(Block));
}

// ggml's nearest_int(): adds 1.5*2^23 so that the FPU rounds away the fraction (round half
// to even under the default rounding mode) and reads the integer back from the mantissa.
// Reproduced bit for bit, including its (meaningless but deterministic) result for
// |x| >= 2^22, inf and NaN, so that degenerate blocks encode exactly as llama.cpp's.
inline int nearest_int(float x) {
    const float biased = x + 12582912.f;
    return static_cast<int>(std::bit_cast<uint32_t>(biased) & 0x007FFFFFu) - 0x00400000;
}

// C's float -> integer conversion as x86-64 performs it (cvttss2si): truncation toward
// zero, and INT32_MIN ("integer indefinite") for NaN and out-of-range values. ggml's legacy
// quantizers write `(int8_t)(x + 8.5f)`; this plus a cast to the narrow type reproduces it
// without undefined behaviour for degenerate inputs.
inline int32_t truncate_to_int_x86(float x) {
    if (!(x > -2147483648.f && x < 2147483648.f)) return INT32_MIN;
    return static_cast<int32_t>(x);
}

// Round to nearest, ties to even, saturated to int8, as AVX's round_ps(NEAREST) +
// cvtps_epi32 + packs_epi32/packs_epi16 do (NaN and |x| >= 2^31 become INT32_MIN, -128).
inline int8_t round_even_saturate_int8(float x) {
    if (!(x > -2147483648.f && x < 2147483648.f)) return INT8_MIN;
    const float r = std::nearbyint(x);  // default rounding mode: to nearest, ties to even
    if (r > 127.f) return INT8_MAX;
    if (r < -128.f) return INT8_MIN;
    return static_cast<int8_t>(r);
}

inline constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a group this small is zero

// The first element of largest magnitude among x[0..n), with its sign (0 for an empty or
// all-zero group; NaNs are skipped), as ggml's quantizers find it.
inline float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    return max;
}

// The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block (get_scale_min_k4).
inline void k4_scale_min(int j, const uint8_t* scales, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = scales[j] & 63;
        min = scales[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

// The sixteen signed scales (-32..31) of a Q3_K block.
inline void q3k_scales(const uint8_t* packed, int8_t out[16]) {
    for (int j = 0; j < 16; ++j) {
        const int low = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
        const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        out[j] = static_cast<int8_t>((low | (high << 4)) - 32);
    }
}

}  // namespace inferscope::quant_detail
