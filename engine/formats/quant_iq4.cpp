// The 4-bit non-linear formats IQ4_NL (32-element blocks) and IQ4_XS (256-element
// super-blocks of eight 32-element groups with 6-bit group scales). Both store, per element,
// a 4-bit index into the sixteen non-uniform levels kIQ4NLValues (iq4_levels.h).
//
// Quantization is ggml's quantize_iq4_nl / quantize_iq4_xs with no importance matrix
// (quantize_row_iq4_nl_impl with ntry = 7), which is what llama-quantize runs without
// --imatrix for both types. (ggml's quantize_row_iq4_nl_ref passes ntry = -1 instead, a
// cheaper search that nothing writing model files uses; it is not reproduced here.) The
// searches keep ggml's float types and operand order so that the chosen levels, and hence
// the bytes, are the same. Dequantization and the dot products follow ggml-quants.c's
// dequantize_row_iq4_* and ggml-cpu's ggml_vec_dot_iq4_nl_q8_0 / ggml_vec_dot_iq4_xs_q8_K
// (generic versions): exact integer sums per 32-element group, one float update per group.
#include <cmath>

#include "engine/core/fp16.h"
#include "engine/formats/quant_blocks.h"
#include "engine/formats/quant_impl.h"

namespace inferscope::quant_detail {
namespace {

constexpr int kSearchSteps = 7;         // ggml's ntry: trial scales (itry + values[0]) / max

// The index of the level of kIQ4NLValues nearest to x; on a tie the upper one. Compares 2x
// with the sum of two neighbouring levels (both exact in float) in a branch-free binary
// search, as ggml's best_index_int8 does (NaN gives 0).
int nearest_level(float x) {
    const float x2 = x + x;
    int index = 0;
    for (int step = 8; step > 0; step >>= 1) {
        const int j = index + step;
        index = x2 >= static_cast<float>(kIQ4NLValues[j - 1] + kIQ4NLValues[j]) ? j : index;
    }
    return index;
}

// Weighted least-squares sums of x against the levels chosen with inverse scale `id`
// (weights x^2): sum(w*q*x) and sum(w*q*q), accumulated in ggml's order.
struct LevelFit {
    float sumqx = 0.0f, sumq2 = 0.0f;
};
LevelFit fit_levels(const float* x, float id, uint8_t* levels) {
    LevelFit fit;
    for (int j = 0; j < kQK; ++j) {
        const int l = nearest_level(id * x[j]);
        if (levels != nullptr) levels[j] = static_cast<uint8_t>(l);
        const float q = kIQ4NLValues[l];
        const float w = x[j] * x[j];
        fit.sumqx += w * q * x[j];
        fit.sumq2 += w * q * q;
    }
    return fit;
}

// The scale of one 32-element group (0 for a group below kGroupMaxEps): start from the scale
// that maps the element of largest magnitude onto the extreme level -127, refine it by least
// squares, then try the inverse scales (itry - 127) / max for itry in [-7, 7], keeping the
// one with the best sum(w*q*x)^2 / sum(w*q*q). `levels` gets the first fit's indices (which
// the callers replace against the final scale).
float group_scale(const float* x, uint8_t* levels) {
    const float max = signed_absmax(x, kQK);
    if (std::fabs(max) < kGroupMaxEps) return 0.0f;
    float d = -max / kIQ4NLValues[0];
    LevelFit fit = fit_levels(x, 1 / d, levels);
    d = fit.sumq2 > 0 ? fit.sumqx / fit.sumq2 : 0.0f;
    float best = d * fit.sumqx;
    for (int itry = -kSearchSteps; itry <= kSearchSteps; ++itry) {
        const float id = static_cast<float>(itry + kIQ4NLValues[0]) / max;
        fit = fit_levels(x, id, nullptr);
        if (fit.sumq2 > 0 && fit.sumqx * fit.sumqx > best * fit.sumq2) {
            d = fit.sumqx / fit.sumq2;
            best = d * fit.sumqx;
        }
    }
    return d;
}

// Levels of a 32-element group against inverse scale `id`, packed: element j in the low
// nibble of qs[j], element j + 16 in the high one.
void pack_group(const float* x, float id, uint8_t* qs) {
    for (int j = 0; j < kQK / 2; ++j) {
        qs[j] = static_cast<uint8_t>(nearest_level(id * x[j]) | (nearest_level(id * x[j + kQK / 2]) << 4));
    }
}

// The 32 levels of a packed group (see pack_group) times the group's scale.
void dequantize_group(const uint8_t* qs, float scale, float* dst) {
    for (int j = 0; j < kQK / 2; ++j) {
        dst[j] = scale * kIQ4NLValues[qs[j] & 0xF];
        dst[j + kQK / 2] = scale * kIQ4NLValues[qs[j] >> 4];
    }
}

}  // namespace

// ------------------------------------------------------------------ dequantization

void dequantize_iq4_nl(const uint8_t* src, float* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, dst += kQK) {
        const auto b = load_block<BlockIQ4_NL>(src, i);
        dequantize_group(b.qs, fp16_to_fp32(b.d), dst);
    }
}

void dequantize_iq4_xs(const uint8_t* src, float* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i) {
        const auto b = load_block<BlockIQ4_XS>(src, i);
        const float d = fp16_to_fp32(b.d);
        for (int g = 0; g < kQK_K / kQK; ++g, dst += kQK) {
            dequantize_group(b.qs + g * (kQK / 2), d * static_cast<float>(iq4xs_scale(b, g)), dst);
        }
    }
}

// ------------------------------------------------------------------ quantization

void quantize_iq4_nl(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK) {
        BlockIQ4_NL b{};
        uint8_t unused[kQK];
        const float d = group_scale(src, unused);
        b.d = fp32_to_fp16(d);
        // The levels are chosen again against the scale found (in float, before its f16
        // rounding); a zero group gets 1/d = 0, i.e. every element at level 8 (value 1).
        pack_group(src, d != 0.0f ? 1 / d : 0.0f, b.qs);
        store_block(dst, i, b);
    }
}

void quantize_iq4_xs(const float* src, uint8_t* dst, int64_t blocks) {
    constexpr int kGroups = kQK_K / kQK;
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        float scales[kGroups];
        float max_scale = 0.0f, amax_scale = 0.0f;
        for (int g = 0; g < kGroups; ++g) {
            uint8_t unused[kQK];
            scales[g] = group_scale(src + g * kQK, unused);
            if (std::fabs(scales[g]) > amax_scale) {
                amax_scale = std::fabs(scales[g]);
                max_scale = scales[g];
            }
        }
        // The group scales as 6-bit multiples (-32..31) of d = -max_scale / 32 (the largest
        // one maps to -32). An all-zero block keeps d = -0.0 and every group scale at 0.
        BlockIQ4_XS b{};
        const float d = -max_scale / 32;
        b.d = fp32_to_fp16(d);
        const float id = d != 0.0f ? 1 / d : 0.0f;
        for (int g = 0; g < kGroups; ++g) {
            int l = nearest_int(id * scales[g]);
            l = l < -32 ? -32 : (l > 31 ? 31 : l);
            const float dl = d * static_cast<float>(l);
            pack_group(src + g * kQK, dl != 0.0f ? 1 / dl : 0.0f, b.qs + g * (kQK / 2));
            const int stored = l + 32;
            b.scales_l[g / 2] = static_cast<uint8_t>(b.scales_l[g / 2] | ((stored & 0xF) << (4 * (g % 2))));
            b.scales_h = static_cast<uint16_t>(b.scales_h | ((stored >> 4) << (2 * g)));
        }
        store_block(dst, i, b);
    }
}

// ------------------------------------------------------------------ dot products

namespace {
// sum over a 32-element group of level(w) * x, exact.
int group_dot(const uint8_t* qs, const int8_t* x) {
    int sum = 0;
    for (int j = 0; j < kQK / 2; ++j) {
        sum += x[j] * kIQ4NLValues[qs[j] & 0xF];
        sum += x[j + kQK / 2] * kIQ4NLValues[qs[j] >> 4];
    }
    return sum;
}
}  // namespace

float vec_dot_iq4_nl_q8_0(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<BlockIQ4_NL>(w, i);
        const auto bx = load_block<BlockQ8_0>(x, i);
        const float d = fp16_to_fp32(bx.d) * fp16_to_fp32(bw.d);
        sumf += d * static_cast<float>(group_dot(bw.qs, bx.qs));
    }
    return sumf;
}

float vec_dot_iq4_xs_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<BlockIQ4_XS>(w, i);
        const auto bx = load_block<BlockQ8_K>(x, i);
        const float d = fp16_to_fp32(bw.d) * bx.d;
        for (int g = 0; g < kQK_K / kQK; ++g) {
            const float dl = d * static_cast<float>(iq4xs_scale(bw, g));
            sumf += dl * static_cast<float>(group_dot(bw.qs + g * (kQK / 2), bx.qs + g * kQK));
        }
    }
    return sumf;
}

}  // namespace inferscope::quant_detail
