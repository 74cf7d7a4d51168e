// The legacy 32-element block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
//
// Every expression below keeps the operand order and the float/int types of ggml's code
// (ggml-quants.c for (de)quantization, ggml-cpu/quants.c's *_generic for the dot products),
// because float rounding depends on them: e.g. Q4_0's dot computes (sumi*dx)*dy while
// Q8_0's computes sumi*(dx*dy). FMA contraction is switched off for these files (see
// quant_blocks.h), so each operation rounds once, as written.
#include <algorithm>
#include <cfloat>
#include <cmath>

#include "engine/core/fp16.h"
#include "engine/formats/quant_blocks.h"
#include "engine/formats/quant_impl.h"

namespace inferscope::quant_detail {
namespace {

void min_max(const float* x, int n, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

// The 5th bits of the two elements j and j+16 of a Q5 block.
inline int q5_high_low(uint32_t qh, int j) { return static_cast<int>(((qh >> j) << 4) & 0x10u); }
inline int q5_high_high(uint32_t qh, int j) { return static_cast<int>((qh >> (j + 12)) & 0x10u); }

inline uint32_t load_qh(const uint8_t qh[4]) {
    uint32_t value;
    std::memcpy(&value, qh, sizeof(value));
    return value;
}

template <typename Block>
constexpr bool kHasMin = requires(const Block& b) { b.m; };

// What a symmetric format subtracts from its codes (Q4_0: 8, Q5_0: 16); formats with a
// minimum and the 8-bit ones store the value itself.
template <typename Block>
constexpr int code_offset() {
    if constexpr (kHasMin<Block> || sizeof(Block::qs) == kQK) {
        return 0;
    } else if constexpr (requires(const Block& b) { b.qh; }) {
        return 16;
    } else {
        return 8;
    }
}

// The block's 32 codes, offset removed: element j of the low nibbles is j, of the high ones
// j+16, with the fifth bits from qh where the format has them.
template <typename Block>
void unpack_values(const Block& b, int (&values)[kQK]) {
    if constexpr (sizeof(b.qs) == kQK) {
        for (int j = 0; j < kQK; ++j) values[j] = b.qs[j];
    } else {
        uint32_t qh = 0;
        if constexpr (requires { b.qh; }) qh = load_qh(b.qh);
        for (int j = 0; j < kQK / 2; ++j) {
            values[j] = ((b.qs[j] & 0x0F) | q5_high_low(qh, j)) - code_offset<Block>();
            values[j + kQK / 2] = ((b.qs[j] >> 4) | q5_high_high(qh, j)) - code_offset<Block>();
        }
    }
}

}  // namespace

// ------------------------------------------------------------------ dequantization

namespace {

template <typename Block>
void dequantize_legacy(const uint8_t* src, float* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, dst += kQK) {
        const auto b = load_block<Block>(src, i);
        const float d = fp16_to_fp32(b.d);
        int values[kQK];
        unpack_values(b, values);
        for (int j = 0; j < kQK; ++j) {
            if constexpr (kHasMin<Block>) {
                dst[j] = static_cast<float>(values[j]) * d + fp16_to_fp32(b.m);
            } else {
                dst[j] = static_cast<float>(values[j]) * d;
            }
        }
    }
}

}  // namespace

void dequantize_q4_0(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ4_0>(src, dst, blocks); }
void dequantize_q4_1(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ4_1>(src, dst, blocks); }
void dequantize_q5_0(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ5_0>(src, dst, blocks); }
void dequantize_q5_1(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ5_1>(src, dst, blocks); }
void dequantize_q8_0(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ8_0>(src, dst, blocks); }
void dequantize_q8_1(const uint8_t* src, float* dst, int64_t blocks) { dequantize_legacy<BlockQ8_1>(src, dst, blocks); }

// ------------------------------------------------------------------ reference quantization
// ggml writes `MIN(15, (int8_t)(x0 + 8.5f))`: truncation (so +8.5 rounds half up around the
// offset 8), clamped above only. truncate_to_int_x86 + the int8 cast reproduce that exactly.

namespace {

// Quantizes blocks of 4 or 5 bits: symmetric (Q4_0, Q5_0: d = signed absmax / -2^(bits-1),
// codes offset by 2^(bits-1)) or with a minimum (Q4_1, Q5_1: d = range / (2^bits - 1)). The
// low nibbles of elements j and j+16 share byte j; 5-bit codes keep their fifth bits in qh.
// The clamp to the largest code only bites on symmetric blocks: a minimum's codes stay
// within range by construction.
template <typename Block, int Bits, bool WithMin>
void quantize_small_blocks(const float* src, uint8_t* dst, int64_t blocks) {
    constexpr int kMaxCode = (1 << Bits) - 1;
    for (int64_t i = 0; i < blocks; ++i, src += kQK) {
        Block b{};
        float min = 0.0f;
        float d;
        if constexpr (WithMin) {
            float max;
            min_max(src, kQK, min, max);
            d = (max - min) / static_cast<float>(kMaxCode);
            b.m = fp32_to_fp16(min);
        } else {
            d = signed_absmax(src, kQK) / -static_cast<float>(1 << (Bits - 1));
        }
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        b.d = fp32_to_fp16(d);
        const auto code = [&](float x) {
            const float shifted = WithMin ? (x - min) * id + 0.5f : x * id + (static_cast<float>(1 << (Bits - 1)) + 0.5f);
            return static_cast<uint8_t>(std::min<int>(kMaxCode, static_cast<int8_t>(truncate_to_int_x86(shifted))));
        };
        uint32_t qh = 0;
        for (int j = 0; j < kQK / 2; ++j) {
            const uint8_t q0 = code(src[j]);
            const uint8_t q1 = code(src[j + kQK / 2]);
            b.qs[j] = static_cast<uint8_t>((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= ((q0 & 0x10u) >> 4) << j;
            qh |= ((q1 & 0x10u) >> 4) << (j + kQK / 2);
        }
        if constexpr (Bits == 5) std::memcpy(b.qh, &qh, sizeof(qh));
        store_block(dst, i, b);
    }
}

}  // namespace

void quantize_q4_0_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_small_blocks<BlockQ4_0, 4, false>(src, dst, blocks);
}
void quantize_q4_1_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_small_blocks<BlockQ4_1, 4, true>(src, dst, blocks);
}
void quantize_q5_0_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_small_blocks<BlockQ5_0, 5, false>(src, dst, blocks);
}
void quantize_q5_1_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_small_blocks<BlockQ5_1, 5, true>(src, dst, blocks);
}

namespace {

float absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);  // ggml's MAX()
    return amax;
}

// quantize_row_q8_0_ref / q8_1_ref: d = amax/127, q = roundf(x * (1/d)) -- half away from
// zero, and the multiplier is the reciprocal of the float (not yet f16-rounded) d.
inline int8_t q8_ref_quant(float x, float id) {
    return static_cast<int8_t>(truncate_to_int_x86(std::round(x * id)));
}

// ------------------------------------------------------------------ activation quantization
// ggml-cpu's x86 quantize_row_q8_0 / q8_1 (the AVX/AVX2 path, which is what llama.cpp runs
// on every x86-64 machine built with its default GGML_NATIVE) differ from the _ref versions
// in two ways, both reproduced here:
//  * the multiplier is id = 127/amax, computed directly (not 1/(amax/127)); the two can
//    differ by one ulp;
//  * x*id is rounded with _mm256_round_ps(_MM_ROUND_NEAREST): to nearest, ties to EVEN
//    (roundf would take 2.5 to 3; this takes it to 2).
// The stored scale is still f16(amax/127), and Q8_1's s is f16(d * sum(q)) with the float d.

// ggml's quantize_row_q8_{0,1}_ref (Activations = false) or its x86 quantize_row_q8_{0,1}
// (true, see above). Q8_1 also stores d * sum(q).
template <typename Block, bool Activations>
void quantize_q8_blocks(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK) {
        const float amax = absmax(src, kQK);
        const float d = amax / 127.0f;
        float id;
        if constexpr (Activations) {
            id = amax != 0.0f ? 127.0f / amax : 0.0f;
        } else {
            id = d != 0.0f ? 1.0f / d : 0.0f;
        }
        Block b{};
        b.d = fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < kQK; ++j) {
            b.qs[j] = Activations ? round_even_saturate_int8(src[j] * id) : q8_ref_quant(src[j], id);
            sum += b.qs[j];
        }
        if constexpr (requires { b.s; }) b.s = fp32_to_fp16(d * static_cast<float>(sum));
        store_block(dst, i, b);
    }
}

}  // namespace

void quantize_q8_0_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_q8_blocks<BlockQ8_0, false>(src, dst, blocks);
}
void quantize_q8_1_ref(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_q8_blocks<BlockQ8_1, false>(src, dst, blocks);
}
void quantize_q8_0_activations(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_q8_blocks<BlockQ8_0, true>(src, dst, blocks);
}
void quantize_q8_1_activations(const float* src, uint8_t* dst, int64_t blocks) {
    quantize_q8_blocks<BlockQ8_1, true>(src, dst, blocks);
}

// ------------------------------------------------------------------ dot products
// Integer sums within a block (exact), then one float update of the running sum per block,
// with ggml's operand order. The running sum is a float, as in ggml.

namespace {

// One block's contribution to the running sum, from the exact integer sum of its products.
template <typename WBlock, typename XBlock>
float scaled_block_sum(int sumi, const WBlock& w, const XBlock& x) {
    const float dw = fp16_to_fp32(w.d);
    const float dx = fp16_to_fp32(x.d);
    if constexpr (kHasMin<WBlock>) {
        // d_w*d_x*sum(qw*qx) + m_w*s_x, where s_x = d_x*sum(qx): the min term needs no qw.
        return (dw * dx) * static_cast<float>(sumi) + fp16_to_fp32(w.m) * fp16_to_fp32(x.s);
    } else if constexpr (std::is_same_v<WBlock, BlockQ4_0>) {
        return static_cast<float>(sumi) * dw * dx;
    } else {
        return (dw * dx) * static_cast<float>(sumi);
    }
}

template <typename WBlock, typename XBlock>
float legacy_dot(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<WBlock>(w, i);
        const auto bx = load_block<XBlock>(x, i);
        int values[kQK];
        unpack_values(bw, values);
        int sumi = 0;
        for (int j = 0; j < kQK; ++j) sumi += values[j] * bx.qs[j];
        sumf += scaled_block_sum(sumi, bw, bx);
    }
    return sumf;
}

}  // namespace

float vec_dot_q4_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return legacy_dot<BlockQ4_0, BlockQ8_0>(blocks, w, x);
}
float vec_dot_q4_1_q8_1(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return legacy_dot<BlockQ4_1, BlockQ8_1>(blocks, w, x);
}
float vec_dot_q5_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return legacy_dot<BlockQ5_0, BlockQ8_0>(blocks, w, x);
}
float vec_dot_q5_1_q8_1(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return legacy_dot<BlockQ5_1, BlockQ8_1>(blocks, w, x);
}
float vec_dot_q8_0_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return legacy_dot<BlockQ8_0, BlockQ8_0>(blocks, w, x);
}

}  // namespace inferscope::quant_detail
