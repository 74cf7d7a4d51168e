// The K-quants (256-element super-blocks): dequantization and dot products with Q8_K.
//
// Dequantization follows ggml-quants.c's dequantize_row_*; the dot products follow
// ggml-cpu/quants.c's ggml_vec_dot_*_q8_K_generic, including how they round: Q2_K adds one
// float per block (dall*isum - dmin*summs); Q3_K..Q6_K keep eight float lane sums
// (element k goes to lane k%8, each lane gets d*int_sum per block) that are added together
// only at the end, and Q4_K/Q5_K subtract the min terms from a separate running sum first.
// Integer parts are exact, so only those float steps matter for bit equality.
#include "engine/core/fp16.h"
#include "engine/formats/quant_blocks.h"
#include "engine/formats/quant_impl.h"

namespace inferscope::quant_detail {

// ------------------------------------------------------------------ dequantization

void dequantize_q2_K(const uint8_t* src, float* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i) {
        const auto b = load_block<BlockQ2_K>(src, i);
        const float d = fp16_to_fp32(b.d);
        const float min = fp16_to_fp32(b.dmin);
        int is = 0;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q = b.qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; ++part) {  // elements from q[0..15], then q[16..31]
                    const uint8_t sc = b.scales[is++];
                    const float dl = d * static_cast<float>(sc & 0xF);
                    const float ml = min * static_cast<float>(sc >> 4);
                    for (int l = 0; l < 16; ++l) {
                        *dst++ = dl * static_cast<float>((q[16 * part + l] >> shift) & 3) - ml;
                    }
                }
            }
        }
    }
}

namespace {

// The 256 signed 6-bit values (-32..31) of a Q6_K block, in element order.
void q6k_values(const BlockQ6_K& b, int8_t out[kQK_K]) {
    for (int half = 0; half < 2; ++half) {
        const uint8_t* ql = b.ql + 64 * half;
        const uint8_t* qh = b.qh + 32 * half;
        int8_t* a = out + 128 * half;
        for (int l = 0; l < 32; ++l) {
            a[l + 0] = static_cast<int8_t>(((ql[l + 0] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
            a[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
            a[l + 64] = static_cast<int8_t>(((ql[l + 0] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            a[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

// The 256 signed values (-4..3) of a Q3_K block and its sixteen signed scales, in element
// order: each 2-bit field with 4 subtracted where its hmask bit is clear.
void signed_values(const BlockQ3_K& b, int8_t values[kQK_K], int8_t scales[16]) {
    q3k_scales(b.scales, scales);
    uint8_t m = 1;  // hmask bit: one per 32-element run, across the whole block
    for (int half = 0; half < 2; ++half) {
        const uint8_t* q3 = b.qs + 32 * half;
        for (int shift = 0; shift < 8; shift += 2, m = static_cast<uint8_t>(m << 1)) {
            int8_t* a = values + 128 * half + 16 * shift;  // 32 elements per shift step
            for (int l = 0; l < 32; ++l) {
                a[l] = static_cast<int8_t>(((q3[l] >> shift) & 3) - ((b.hmask[l] & m) ? 0 : 4));
            }
        }
    }
}

void signed_values(const BlockQ6_K& b, int8_t values[kQK_K], int8_t scales[16]) {
    q6k_values(b, values);
    for (int j = 0; j < 16; ++j) scales[j] = b.scales[j];
}

// The unsigned quant values (0..15 or 0..31) of a Q4_K / Q5_K block, in element order.
template <class Block>
void k4_values(const Block& b, const uint8_t* qh, int8_t out[kQK_K]) {
    for (int chunk = 0; chunk < 4; ++chunk) {
        const uint8_t* q = b.qs + 32 * chunk;
        for (int l = 0; l < 32; ++l) {
            int lo = q[l] & 0xF, hi = q[l] >> 4;
            if (qh != nullptr) {
                lo += (qh[l] >> (2 * chunk)) & 1 ? 16 : 0;
                hi += (qh[l] >> (2 * chunk + 1)) & 1 ? 16 : 0;
            }
            out[64 * chunk + l] = static_cast<int8_t>(lo);
            out[64 * chunk + 32 + l] = static_cast<int8_t>(hi);
        }
    }
}

// Q3_K and Q6_K: ggml's y = d * sc * q, i.e. (d*sc)*q, a signed scale per 16 elements.
template <class Block>
void dequantize_signed_scales(const uint8_t* src, float* dst, int64_t blocks) {
    int8_t values[kQK_K];
    int8_t scales[16];
    for (int64_t i = 0; i < blocks; ++i, dst += kQK_K) {
        const auto b = load_block<Block>(src, i);
        const float d = fp16_to_fp32(b.d);
        signed_values(b, values, scales);
        for (int k = 0; k < kQK_K; ++k) dst[k] = d * static_cast<float>(scales[k / 16]) * static_cast<float>(values[k]);
    }
}

// Q4_K and Q5_K: y = (d*sc)*q - dmin*m, a 6-bit scale and min per 32 elements.
template <class Block>
void dequantize_k4_family(const uint8_t* src, float* dst, int64_t blocks) {
    int8_t values[kQK_K];
    for (int64_t i = 0; i < blocks; ++i, dst += kQK_K) {
        const auto b = load_block<Block>(src, i);
        const float d = fp16_to_fp32(b.d);
        const float min = fp16_to_fp32(b.dmin);
        const uint8_t* qh = nullptr;
        if constexpr (requires { b.qh; }) qh = b.qh;
        k4_values(b, qh, values);
        for (int group = 0; group < 8; ++group) {
            uint8_t sc, m;
            k4_scale_min(group, b.scales, sc, m);
            const float dl = d * static_cast<float>(sc), ml = min * static_cast<float>(m);
            for (int l = 0; l < 32; ++l) dst[32 * group + l] = dl * static_cast<float>(values[32 * group + l]) - ml;
        }
    }
}

}  // namespace

void dequantize_q3_K(const uint8_t* src, float* dst, int64_t blocks) {
    dequantize_signed_scales<BlockQ3_K>(src, dst, blocks);
}
void dequantize_q4_K(const uint8_t* src, float* dst, int64_t blocks) {
    dequantize_k4_family<BlockQ4_K>(src, dst, blocks);
}
void dequantize_q5_K(const uint8_t* src, float* dst, int64_t blocks) {
    dequantize_k4_family<BlockQ5_K>(src, dst, blocks);
}
void dequantize_q6_K(const uint8_t* src, float* dst, int64_t blocks) {
    dequantize_signed_scales<BlockQ6_K>(src, dst, blocks);
}

void dequantize_q8_K(const uint8_t* src, float* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i) {
        const auto b = load_block<BlockQ8_K>(src, i);
        for (int k = 0; k < kQK_K; ++k) *dst++ = b.d * static_cast<float>(b.qs[k]);
    }
}

// ------------------------------------------------------------------ dot products

namespace {

// Lane k%8 gets scale16[k/16] * q8[k] * a[k]: the integer part of the generic kernels.
void lane_sums(const int8_t* a, const int8_t* q8, const int scale16[16], int32_t lanes[8]) {
    for (int l = 0; l < 8; ++l) lanes[l] = 0;
    for (int k = 0; k < kQK_K; ++k) lanes[k % 8] += scale16[k / 16] * (q8[k] * a[k]);
}

// Adds one super-block's lane sums, scaled by `d`, to the eight running sums.
void add_scaled_lanes(const int8_t values[kQK_K], const BlockQ8_K& bx, const int scale16[16], float d, float sums[8]) {
    int32_t lanes[8];
    lane_sums(values, bx.qs, scale16, lanes);
    for (int l = 0; l < 8; ++l) sums[l] += d * static_cast<float>(lanes[l]);
}

// `start` plus the eight running sums, in lane order.
float add_lane_totals(float start, const float sums[8]) {
    for (int l = 0; l < 8; ++l) start += sums[l];
    return start;
}

// add_scaled_lanes for Q3_K and Q6_K: sixteen signed scales, d = the block's d x q8's d.
void add_signed_scaled_lanes(const int8_t values[kQK_K], const BlockQ8_K& bx, const int8_t scales[16], float block_d,
                             float sums[8]) {
    int scale16[16];
    for (int j = 0; j < 16; ++j) scale16[j] = scales[j];
    add_scaled_lanes(values, bx, scale16, block_d * bx.d, sums);
}

// Shared by Q3_K and Q6_K: sixteen signed scales, no min.
template <class Block>
float dot_signed_scales(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    int8_t values[kQK_K];
    int8_t scales[16];
    float sums[8] = {};
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<Block>(w, i);
        const auto bx = load_block<BlockQ8_K>(x, i);
        signed_values(bw, values, scales);
        add_signed_scaled_lanes(values, bx, scales, fp16_to_fp32(bw.d), sums);
    }
    return add_lane_totals(0.0f, sums);
}

// Shared by Q4_K and Q5_K (same scales and min layout; Q5_K adds the fifth bits in qh).
template <class Block>
float dot_k4_family(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    int8_t values[kQK_K];
    float sums[8] = {};
    float sumf = 0.0f;
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<Block>(w, i);
        const auto bx = load_block<BlockQ8_K>(x, i);
        const uint8_t* qh = nullptr;
        if constexpr (requires { bw.qh; }) qh = bw.qh;
        k4_values(bw, qh, values);
        int scale16[16];
        int sumi = 0;
        for (int j = 0; j < 8; ++j) {
            uint8_t sc, m;
            k4_scale_min(j, bw.scales, sc, m);
            scale16[2 * j] = scale16[2 * j + 1] = sc;
            sumi += bx.bsums[2 * j] * m + bx.bsums[2 * j + 1] * m;
        }
        add_scaled_lanes(values, bx, scale16, fp16_to_fp32(bw.d) * bx.d, sums);
        const float dmin = fp16_to_fp32(bw.dmin) * bx.d;
        sumf -= dmin * static_cast<float>(sumi);
    }
    return add_lane_totals(sumf, sums);
}

}  // namespace

float vec_dot_q2_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    float sumf = 0.0f;
    for (int64_t i = 0; i < blocks; ++i) {
        const auto bw = load_block<BlockQ2_K>(w, i);
        const auto bx = load_block<BlockQ8_K>(x, i);
        int summs = 0;
        for (int j = 0; j < 16; ++j) summs += bx.bsums[j] * (bw.scales[j] >> 4);
        const float dall = bx.d * fp16_to_fp32(bw.d);
        const float dmin = bx.d * fp16_to_fp32(bw.dmin);
        int isum = 0;
        int is = 0;
        const int8_t* q8 = bx.qs;
        for (int half = 0; half < 2; ++half) {
            const uint8_t* q2 = bw.qs + 32 * half;
            for (int shift = 0; shift < 8; shift += 2, q8 += 32) {
                for (int part = 0; part < 2; ++part) {
                    int isuml = 0;
                    for (int l = 16 * part; l < 16 * part + 16; ++l) isuml += q8[l] * ((q2[l] >> shift) & 3);
                    isum += (bw.scales[is++] & 0xF) * isuml;
                }
            }
        }
        sumf += dall * static_cast<float>(isum) - dmin * static_cast<float>(summs);
    }
    return sumf;
}

float vec_dot_q4_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return dot_k4_family<BlockQ4_K>(blocks, w, x);
}

float vec_dot_q5_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return dot_k4_family<BlockQ5_K>(blocks, w, x);
}

float vec_dot_q3_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return dot_signed_scales<BlockQ3_K>(blocks, w, x);
}

float vec_dot_q6_K_q8_K(int64_t blocks, const uint8_t* w, const uint8_t* x) {
    return dot_signed_scales<BlockQ6_K>(blocks, w, x);
}

}  // namespace inferscope::quant_detail
