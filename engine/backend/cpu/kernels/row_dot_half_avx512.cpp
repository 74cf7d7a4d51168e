// AVX-512 row dot products of F16 and BF16 weights (row_dot.h), part of the family
// described in row_dot_avx512.cpp. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything but the entry point stays in an anonymous namespace.
#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/row_dot_avx512.h"

namespace inferscope::simd {
namespace {

inline __m512 f16x16(const uint8_t* p) { return _mm512_cvtph_ps(load256(p)); }
inline __m512 bf16x16(const uint8_t* p) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(load256(p)), 16));
}

template <bool BF16>
inline __m512 halves16(const uint8_t* p) {
    return BF16 ? bf16x16(p) : f16x16(p);
}

template <bool BF16>
inline __m512 halves_masked(const uint8_t* p, __mmask16 m) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, p);
    if constexpr (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

// Products of two f16 or two bf16 values are exact in float: the fma only orders the sums.
// 64 elements per step (128 bytes of each row), four accumulators per row up to four rows and
// two beyond (eight rows of four would not fit the 32 registers; at least eight independent
// sums keep both fma pipes busy either way).
template <bool BF16>
struct HalvesRows {
    static constexpr int64_t kAheadBytes = tuning::kRowDotPrefetchBytes;
    static constexpr int kLocality = kIntoL1;
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        constexpr int kAcc = R > 4 ? 2 : 4;
        __m512 acc[R][kAcc];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
            for (auto& a : acc[r]) a = _mm512_setzero_ps();
        }
        int64_t i = 0;
        for (; i + 64 <= n; i += 64) {
            const uint8_t* xi = x + 2 * i;
            const __m512 x0 = halves16<BF16>(xi), x1 = halves16<BF16>(xi + 32);
            const __m512 x2 = halves16<BF16>(xi + 64), x3 = halves16<BF16>(xi + 96);
            const int64_t pf = ahead.at(2 * i);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wi = w + r * rb + 2 * i;
                prefetch_span<128, kLocality>(wi + pf);
                acc[r][0] = _mm512_fmadd_ps(halves16<BF16>(wi), x0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(halves16<BF16>(wi + 32), x1, acc[r][1]);
                acc[r][2 % kAcc] = _mm512_fmadd_ps(halves16<BF16>(wi + 64), x2, acc[r][2 % kAcc]);
                acc[r][3 % kAcc] = _mm512_fmadd_ps(halves16<BF16>(wi + 96), x3, acc[r][3 % kAcc]);
            }
        }
        for (; i + 16 <= n; i += 16) {
            const __m512 xv = halves16<BF16>(x + 2 * i);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][0] = _mm512_fmadd_ps(halves16<BF16>(w + r * rb + 2 * i), xv, acc[r][0]);
        }
        if (i < n) {
            const __mmask16 m = first_lanes(n - i);
            const __m512 xv = halves_masked<BF16>(x + 2 * i, m);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) acc[r][1] = _mm512_fmadd_ps(halves_masked<BF16>(w + r * rb + 2 * i, m), xv, acc[r][1]);
        }
        __m512 total[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            total[r] = _mm512_add_ps(acc[r][0], acc[r][1]);
            if constexpr (kAcc == 4) total[r] = _mm512_add_ps(total[r], _mm512_add_ps(acc[r][2], acc[r][3]));
        }
        store_sums<R>(out, out_stride, total);
    }

    // ---- batches (dot_rows_batch): one weight row converted once for up to kMaxBatch
    // activation rows, laid out as floats (one register per 16 elements, the last masked as
    // rows() masks it). rows() keeps four accumulators per row in groups of up to four rows
    // and two beyond: the row's group size picks the same.
    static constexpr bool kTailMin = false;
    static int64_t layout_regs(int64_t n) { return (n + 15) / 16; }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        for (int64_t i = 0; i < n; i += 16, ++v) {
            const __m512 x16 = i + 16 <= n ? halves16<BF16>(x + 2 * i) : halves_masked<BF16>(x + 2 * i, first_lanes(n - i));
            *v = _mm512_castps_si512(x16);
        }
    }
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int group_rows,
                          __m512 (&total)[B], float (&tail_min)[B]) {
        if (group_rows > 4) {
            row_batch_with<B, 2>(n, w, x, x_regs, pf, total);
        } else {
            row_batch_with<B, 4>(n, w, x, x_regs, pf, total);
        }
        for (float& t : tail_min) t = 0.0f;
    }
    template <int B, int kAcc>
    static void row_batch_with(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, __m512 (&total)[B]) {
        __m512 acc[B][kAcc];
#pragma GCC unroll 4
        for (int b = 0; b < B; ++b) {
#pragma GCC unroll 4
            for (auto& a : acc[b]) a = _mm512_setzero_ps();
        }
        const auto xv = [&](int b, int64_t i) { return _mm512_castsi512_ps(x[b * x_regs + i / 16]); };
        int64_t i = 0;
        for (; i + 64 <= n; i += 64) {
            const uint8_t* wi = w + 2 * i;
            prefetch_span<128, kLocality>(wi + pf);
            const __m512 w0 = halves16<BF16>(wi), w1 = halves16<BF16>(wi + 32);
            const __m512 w2 = halves16<BF16>(wi + 64), w3 = halves16<BF16>(wi + 96);
#pragma GCC unroll 4
            for (int b = 0; b < B; ++b) {
                acc[b][0] = _mm512_fmadd_ps(w0, xv(b, i), acc[b][0]);
                acc[b][1] = _mm512_fmadd_ps(w1, xv(b, i + 16), acc[b][1]);
                acc[b][2 % kAcc] = _mm512_fmadd_ps(w2, xv(b, i + 32), acc[b][2 % kAcc]);
                acc[b][3 % kAcc] = _mm512_fmadd_ps(w3, xv(b, i + 48), acc[b][3 % kAcc]);
            }
        }
        for (; i + 16 <= n; i += 16) {
            const __m512 w16 = halves16<BF16>(w + 2 * i);
#pragma GCC unroll 4
            for (int b = 0; b < B; ++b) acc[b][0] = _mm512_fmadd_ps(w16, xv(b, i), acc[b][0]);
        }
        if (i < n) {
            const __m512 w16 = halves_masked<BF16>(w + 2 * i, first_lanes(n - i));
#pragma GCC unroll 4
            for (int b = 0; b < B; ++b) acc[b][1] = _mm512_fmadd_ps(w16, xv(b, i), acc[b][1]);
        }
#pragma GCC unroll 4
        for (int b = 0; b < B; ++b) {
            total[b] = _mm512_add_ps(acc[b][0], acc[b][1]);
            if constexpr (kAcc == 4) total[b] = _mm512_add_ps(total[b], _mm512_add_ps(acc[b][2], acc[b][3]));
        }
    }
};

}  // namespace

RowDotKernels avx512_half_row_dots(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F16: return rows_kernels<HalvesRows<false>>(GgmlType::F16);
        case GgmlType::BF16: return rows_kernels<HalvesRows<true>>(GgmlType::BF16);
        default: return {};
    }
}

}  // namespace inferscope::simd
