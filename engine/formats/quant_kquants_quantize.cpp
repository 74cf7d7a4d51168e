// K-quant quantization: ggml's reference (non-imatrix) algorithms, quantize_row_q*_K_ref,
// which is what llama-quantize runs when it is given no importance matrix.
//
// Each sub-block gets a scale (and for Q2_K/Q4_K/Q5_K a min) from a small search that
// minimises a weighted squared (or absolute) error; the per-sub-block values are then
// quantized against the super-block scale(s), and finally every element is re-quantized
// against the scale it will actually be decoded with. The searches are re-implemented here
// with ggml's float types and operand order so that the selected levels, and hence the
// bytes, are the same as llama.cpp's.
#include <algorithm>
#include <cmath>

#include "engine/core/fp16.h"
#include "engine/formats/quant_blocks.h"
#include "engine/formats/quant_impl.h"

namespace inferscope::quant_detail {
namespace {

// Least-squares fit of a symmetric scale (make_qx_quants with rmse_type 1: weights x^2, no
// importance). Tries 19 trial inverse scales around nmax/max; L gets l + nmax in [0, 2*nmax).
float fit_symmetric_scale(int n, int nmax, const float* x, int8_t* L) {
    const float max = signed_absmax(x, n);
    if (std::fabs(max) < kGroupMaxEps) {
        std::fill(L, L + n, int8_t{0});
        return 0.0f;
    }
    auto level = [&](float iscale, int i) { return std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1); };
    auto accumulate = [&](float iscale, float& sumlx, float& suml2) {
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float l = static_cast<float>(level(iscale, i));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
    };
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx, suml2;
    accumulate(iscale, sumlx, suml2);
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, i) + nmax);
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        accumulate(iscale, sumlx, suml2);
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(level(iscale, i) + nmax);
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

// make_q3_quants(do_rmse = true): a symmetric fit refined by coordinate descent, moving one
// element at a time to the level that improves sum(w*x*l)^2 / sum(w*l^2) (w = x^2), for
// up to five passes. L gets l + nmax; a zero group gets L = 0 (and scale 0).
float fit_q3_scale(int n, int nmax, const float* x, int8_t* L) {
    const float max = signed_absmax(x, n);
    if (std::fabs(max) < kGroupMaxEps) {
        std::fill(L, L + n, int8_t{0});
        return 0.0f;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; ++i) {
        const int l = std::clamp(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (!(slx > 0)) continue;
            float sl2 = suml2 - w * li * li;
            const int new_l = std::clamp(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
            if (new_l == L[i]) continue;
            slx += w * x[i] * static_cast<float>(new_l);
            sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
            if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                L[i] = static_cast<int8_t>(new_l);
                sumlx = slx;
                suml2 = sl2;
                ++changed;
            }
        }
        if (changed == 0) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

struct AsymmetricFit {
    float scale;
    float min;  // the subtracted offset, >= 0: x ~ scale*L - min
};

// make_qkx2_quants: x ~ scale*L + m with m <= 0 and L in [0, nmax], minimising the weighted
// squared (or, with use_mad, absolute) error over nstep+1 trial inverse scales
// (rmin + rdelta*is + nmax)/(max - min), each refined by a weighted least-squares solve.
AsymmetricFit fit_asymmetric(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                             float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        std::fill(L, L + n, uint8_t{0});
        return {0.0f, -min};
    }
    auto error_of = [&](float scale, float offset, const uint8_t* levels) {
        float error = 0.0f;
        for (int i = 0; i < n; ++i) {
            float diff = scale * static_cast<float>(levels[i]) + offset - x[i];
            diff = use_mad ? std::fabs(diff) : diff * diff;
            error += weights[i] * diff;
        }
        return error;
    };
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax));
    float best_error = error_of(scale, min, L);
    uint8_t trial[kQK_K];
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest_int(iscale * (x[i] - min)), 0, nmax);
            trial[i] = static_cast<uint8_t>(l);
            const float w = weights[i], lf = static_cast<float>(l);
            sum_l += w * lf;
            sum_l2 += w * lf * lf;
            sum_xl += w * lf * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (!(D > 0)) continue;
        float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
        float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
        if (this_min > 0) {
            this_min = 0;
            this_scale = sum_xl / sum_l2;
        }
        const float error = error_of(this_scale, this_min, trial);
        if (error < best_error) {
            std::copy(trial, trial + n, L);
            best_error = error;
            scale = this_scale;
            min = this_min;
        }
    }
    return {scale, -min};
}

// Packs 2-bit levels (0..3) of 256 elements the way Q2_K and Q3_K store them: byte l of
// each 32-byte half holds elements l, l+32, l+64, l+96 of that half's 128 elements.
void pack_2bit(const int8_t* L, uint8_t* qs) {
    for (int j = 0; j < kQK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                                 (L[j + l + 96] << 6));
        }
    }
}

}  // namespace

// ------------------------------------------------------------------ Q2_K

void quantize_q2_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    constexpr float kQ4Scale = 15.f;
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        uint8_t L[kQK_K];
        float scales[16], mins[16], weights[16];
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(src[16 * j + l]);
            const auto fit = fit_asymmetric(16, 3, src + 16 * j, weights, L + 16 * j, -0.5f, 0.1f, 15, true);
            scales[j] = fit.scale;
            mins[j] = fit.min;
            if (fit.scale > max_scale) max_scale = fit.scale;
            if (fit.min > max_min) max_min = fit.min;
        }
        BlockQ2_K b{};
        if (max_scale > 0) {
            const float iscale = kQ4Scale / max_scale;
            for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
            b.d = fp32_to_fp16(max_scale / kQ4Scale);
        }
        if (max_min > 0) {
            const float iscale = kQ4Scale / max_min;
            for (int j = 0; j < 16; ++j) {
                const auto l = static_cast<uint32_t>(nearest_int(iscale * mins[j]));
                b.scales[j] = static_cast<uint8_t>(b.scales[j] | (l << 4));
            }
            b.dmin = fp32_to_fp16(max_min / kQ4Scale);
        }
        int8_t levels[kQK_K];
        for (int k = 0; k < kQK_K; ++k) levels[k] = static_cast<int8_t>(L[k]);
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = fp16_to_fp32(b.dmin) * static_cast<float>(b.scales[j] >> 4);
            for (int l = 0; l < 16; ++l) {
                levels[16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int((src[16 * j + l] + dm) / d), 0, 3));
            }
        }
        pack_2bit(levels, b.qs);
        store_block(dst, i, b);
    }
}

// ------------------------------------------------------------------ Q3_K

namespace {

void pack_q3k_scales(const float scales[16], float max_scale, BlockQ3_K& b) {
    const float iscale = -32.f / max_scale;
    for (int j = 0; j < 16; ++j) {
        // ggml stores nearest_int() in an int8_t before clamping; keep that narrowing.
        int l = static_cast<int8_t>(nearest_int(iscale * scales[j]));
        l = std::clamp(l, -32, 31) + 32;
        if (j < 8) {
            b.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
            b.scales[j - 8] = static_cast<uint8_t>(b.scales[j - 8] | ((l & 0xF) << 4));
        }
        b.scales[j % 4 + 8] = static_cast<uint8_t>(b.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
    }
    b.d = fp32_to_fp16(1 / iscale);
}

// Q3_K and Q6_K: `fit(x, L)` scales each of the 16 sub-blocks of 16 elements; returns the
// scale of largest magnitude (the first of equals), its magnitude in `max_abs`.
template <typename Fit>
float fit_sixteen_scales(const float* src, int8_t L[kQK_K], float scales[16], Fit fit, float& max_abs) {
    float max_scale = 0;
    max_abs = 0;
    for (int j = 0; j < 16; ++j) {
        scales[j] = fit(src + 16 * j, L + 16 * j);
        if (std::fabs(scales[j]) > max_abs) {
            max_abs = std::fabs(scales[j]);
            max_scale = scales[j];
        }
    }
    return max_scale;
}

}  // namespace

void quantize_q3_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        int8_t L[kQK_K];
        float scales[16];
        float amax;
        const float max_scale = fit_sixteen_scales(
            src, L, scales, [](const float* x, int8_t* l) { return fit_q3_scale(16, 4, x, l); }, amax);
        BlockQ3_K b{};
        if (max_scale != 0.0f) pack_q3k_scales(scales, max_scale, b);
        int8_t decoded[16];
        q3k_scales(b.scales, decoded);
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(b.d) * static_cast<float>(decoded[j]);
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; ++l) {
                L[16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(src[16 * j + l] / d), -4, 3) + 4);
            }
        }
        // The high bit of element k goes to bit k/32 of hmask[k%32]; the low two bits to qs.
        for (int k = 0; k < kQK_K; ++k) {
            if (L[k] > 3) {
                b.hmask[k % 32] = static_cast<uint8_t>(b.hmask[k % 32] | (1u << (k / 32)));
                L[k] = static_cast<int8_t>(L[k] - 4);
            }
        }
        pack_2bit(L, b.qs);
        store_block(dst, i, b);
    }
}

// ------------------------------------------------------------------ Q4_K, Q5_K

namespace {

// Shared by Q4_K (nmax 15) and Q5_K (nmax 31): fits each 32-element sub-block, stores the
// 6-bit scales/mins and the f16 super-scales into `b`, and leaves the final levels in L.
template <class Block>
void quantize_k4_family(const float* x, int nmax, float rmin, int nstep, Block& b, uint8_t L[kQK_K]) {
    float scales[8], mins[8], weights[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        const float* xs = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xs[l]);
        const auto fit = fit_asymmetric(32, nmax, xs, weights, L + 32 * j, rmin, 0.1f, nstep, false);
        scales[j] = fit.scale;
        mins[j] = fit.min;
        if (fit.scale > max_scale) max_scale = fit.scale;
        if (fit.min > max_min) max_min = fit.min;
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        // ggml: uint8_t ls = nearest_int(...); ls = MIN(63, ls) -- narrowed before the clamp.
        const auto ls = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_scale * scales[j])));
        const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(nearest_int(inv_min * mins[j])));
        if (j < 4) {
            b.scales[j] = ls;
            b.scales[j + 4] = lm;
        } else {
            b.scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
            b.scales[j - 4] = static_cast<uint8_t>(b.scales[j - 4] | ((ls >> 4) << 6));
            b.scales[j] = static_cast<uint8_t>(b.scales[j] | ((lm >> 4) << 6));
        }
    }
    b.d = fp32_to_fp16(max_scale / 63.f);
    b.dmin = fp32_to_fp16(max_min / 63.f);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        k4_scale_min(j, b.scales, sc, m);
        const float d = fp16_to_fp32(b.d) * static_cast<float>(sc);
        if (d == 0.0f) continue;
        const float dm = fp16_to_fp32(b.dmin) * static_cast<float>(m);
        for (int l = 0; l < 32; ++l) {
            L[32 * j + l] = static_cast<uint8_t>(std::clamp(nearest_int((x[32 * j + l] + dm) / d), 0, nmax));
        }
    }
}

}  // namespace

void quantize_q4_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        BlockQ4_K b{};
        uint8_t L[kQK_K];
        quantize_k4_family(src, 15, -1.f, 20, b, L);
        for (int chunk = 0; chunk < 4; ++chunk) {
            for (int l = 0; l < 32; ++l) {
                b.qs[32 * chunk + l] = static_cast<uint8_t>(L[64 * chunk + l] | (L[64 * chunk + 32 + l] << 4));
            }
        }
        store_block(dst, i, b);
    }
}

void quantize_q5_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        BlockQ5_K b{};
        uint8_t L[kQK_K];
        quantize_k4_family(src, 31, -0.5f, 15, b, L);
        for (int chunk = 0; chunk < 4; ++chunk) {
            const auto m1 = static_cast<uint8_t>(1u << (2 * chunk));
            const auto m2 = static_cast<uint8_t>(2u << (2 * chunk));
            for (int l = 0; l < 32; ++l) {
                int l1 = L[64 * chunk + l], l2 = L[64 * chunk + 32 + l];
                if (l1 > 15) {
                    l1 -= 16;
                    b.qh[l] = static_cast<uint8_t>(b.qh[l] | m1);
                }
                if (l2 > 15) {
                    l2 -= 16;
                    b.qh[l] = static_cast<uint8_t>(b.qh[l] | m2);
                }
                b.qs[32 * chunk + l] = static_cast<uint8_t>(l1 | (l2 << 4));
            }
        }
        store_block(dst, i, b);
    }
}

// ------------------------------------------------------------------ Q6_K

void quantize_q6_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        int8_t L[kQK_K];
        float scales[16];
        float max_abs_scale;
        const float max_scale = fit_sixteen_scales(
            src, L, scales, [](const float* x, int8_t* l) { return fit_symmetric_scale(16, 32, x, l); }, max_abs_scale);
        BlockQ6_K b{};
        if (max_abs_scale < kGroupMaxEps) {  // all zero: an all-zero block (d = 0)
            store_block(dst, i, b);
            continue;
        }
        const float iscale = -128.f / max_scale;
        b.d = fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < 16; ++ib) b.scales[ib] = static_cast<int8_t>(std::min(127, nearest_int(iscale * scales[ib])));
        for (int j = 0; j < 16; ++j) {
            const float d = fp16_to_fp32(b.d) * static_cast<float>(b.scales[j]);
            if (d == 0.0f) continue;
            for (int l = 0; l < 16; ++l) {
                L[16 * j + l] = static_cast<int8_t>(std::clamp(nearest_int(src[16 * j + l] / d), -32, 31) + 32);
            }
        }
        for (int half = 0; half < 2; ++half) {
            const int8_t* Lh = L + 128 * half;
            uint8_t* ql = b.ql + 64 * half;
            uint8_t* qh = b.qh + 32 * half;
            for (int l = 0; l < 32; ++l) {
                ql[l] = static_cast<uint8_t>((Lh[l] & 0xF) | ((Lh[l + 64] & 0xF) << 4));
                ql[l + 32] = static_cast<uint8_t>((Lh[l + 32] & 0xF) | ((Lh[l + 96] & 0xF) << 4));
                qh[l] = static_cast<uint8_t>((Lh[l] >> 4) | ((Lh[l + 32] >> 4) << 2) | ((Lh[l + 64] >> 4) << 4) |
                                             ((Lh[l + 96] >> 4) << 6));
            }
        }
        store_block(dst, i, b);
    }
}

// ------------------------------------------------------------------ Q8_K
// quantize_row_q8_K_ref (ggml-cpu on x86 uses it as is for activations): iscale = -127/max
// where max is the element of largest magnitude WITH its sign (older ggml used -128/max);
// q = nearest_int(iscale*x) (ties to even), capped at 127; d = 1/iscale is stored as a
// float32, so d is negative when max is positive. bsums are the sums of 16 quants.

void quantize_q8_K_ref(const float* src, uint8_t* dst, int64_t blocks) {
    for (int64_t i = 0; i < blocks; ++i, src += kQK_K) {
        BlockQ8_K b{};  // ggml leaves bsums unwritten for an all-zero block; they are 0 here
        const float max = signed_absmax(src, kQK_K);
        if (max != 0.0f) {
            const float iscale = -127.f / max;
            for (int k = 0; k < kQK_K; ++k) b.qs[k] = static_cast<int8_t>(std::min(127, nearest_int(iscale * src[k])));
            for (int j = 0; j < 16; ++j) {
                int sum = 0;
                for (int l = 0; l < 16; ++l) sum += b.qs[16 * j + l];
                b.bsums[j] = static_cast<int16_t>(sum);
            }
            b.d = 1 / iscale;
        }
        store_block(dst, i, b);
    }
}

}  // namespace inferscope::quant_detail
