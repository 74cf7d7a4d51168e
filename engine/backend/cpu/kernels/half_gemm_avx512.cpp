// AVX-512 kernels of half_gemm.h. Compiled with AVX-512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
//
// Narrow path: a tile of kRows weight rows x RN activation rows keeps kRows * RN
// accumulators (24 of the 32 registers at 3 x 8); per 16 elements it widens kRows weight
// vectors and loads RN activation vectors (from L1/L2: the activation rows are reused by
// every row tile). Each accumulator is summed horizontally once, at the end of its row.
//
// Wide path: NV vectors of interleaved activations (16 / G rows x G elements each) per group
// of G elements and a tile of 24 / NV weight rows (24 accumulators); per chunk of kChunk
// elements the tile's weights are widened into a stack buffer, then each G of them are
// broadcast against the NV vectors. The finished sums of one weight row (G lanes added per
// activation row) are scattered to their n rows of c.
#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/kernels/half_gemm.h"
#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/tuning_avx512.h"

namespace inferscope::simd {
namespace {

constexpr int kRows = avx512_tuning::kHalfGemmTileRows;      // weight rows per tile
constexpr int kMaxGroup = avx512_tuning::kHalfGemmMaxGroup;  // activation rows per tile

template <bool BF16>
inline __m512 widen(__m256i halves) {
    if constexpr (BF16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
    return _mm512_cvtph_ps(halves);
}

template <bool BF16>
inline __m512 load_weights(const uint8_t* row, int64_t l) {
    return widen<BF16>(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row + 2 * l)));
}

template <bool BF16>
inline __m512 load_weights(const uint8_t* row, int64_t l, __mmask16 mask) {
    return widen<BF16>(_mm256_maskz_loadu_epi16(mask, row + 2 * l));
}

// Rows [r0, r0 + RM) against activation rows [i0, i0 + RN), over the whole row length.
template <bool BF16, int RM, int RN>
void tile(const HalfGemmArgs& a, int64_t r0, int64_t i0) {
    const uint8_t* w[RM];
    const float* x[RN];
    for (int m = 0; m < RM; ++m) w[m] = a.weights + static_cast<uint64_t>(r0 + m) * a.weight_row_bytes;
    for (int j = 0; j < RN; ++j) x[j] = a.x + (i0 + j) * a.k;
    __m512 acc[RM][RN];
#pragma GCC unroll 8
    for (int m = 0; m < RM; ++m) {
#pragma GCC unroll 8
        for (int j = 0; j < RN; ++j) acc[m][j] = _mm512_setzero_ps();
    }
    int64_t l = 0;
    for (; l + 16 <= a.k; l += 16) {
        __m512 wv[RM];
#pragma GCC unroll 8
        for (int m = 0; m < RM; ++m) wv[m] = load_weights<BF16>(w[m], l);
#pragma GCC unroll 8
        for (int j = 0; j < RN; ++j) {
            __m512 xv = _mm512_loadu_ps(x[j] + l);
            // One load per activation vector: without this the compiler folds the load into
            // each of the RM multiply-adds, tripling the loads that bound this loop.
            __asm__("" : "+v"(xv));
#pragma GCC unroll 8
            for (int m = 0; m < RM; ++m) acc[m][j] = _mm512_fmadd_ps(wv[m], xv, acc[m][j]);
        }
    }
    // Every loop over acc fully unrolled: one that is not makes GCC keep the array in memory,
    // and the main loop then spills its widened weights to the stack.
    if (l < a.k) {
        const __mmask16 mask = first_lanes(a.k - l);
        __m512 wv[RM];
#pragma GCC unroll 8
        for (int m = 0; m < RM; ++m) wv[m] = load_weights<BF16>(w[m], l, mask);
#pragma GCC unroll 8
        for (int j = 0; j < RN; ++j) {
            const __m512 xv = _mm512_maskz_loadu_ps(mask, x[j] + l);
#pragma GCC unroll 8
            for (int m = 0; m < RM; ++m) acc[m][j] = _mm512_fmadd_ps(wv[m], xv, acc[m][j]);
        }
    }
#pragma GCC unroll 8
    for (int j = 0; j < RN; ++j) {
        float* out = a.c + (i0 + j) * a.ldc + r0;
#pragma GCC unroll 8
        for (int m = 0; m < RM; ++m) out[m] = _mm512_reduce_add_ps(acc[m][j]);
    }
}

template <bool BF16, int RM, int RN = kMaxGroup>
void tile_with_group(int rn, const HalfGemmArgs& a, int64_t r0, int64_t i0) {
    if constexpr (RN >= 1) {
        if (rn == RN) return tile<BF16, RM, RN>(a, r0, i0);
        return tile_with_group<BF16, RM, RN - 1>(rn, a, r0, i0);
    }
}

template <bool BF16>
void run_tile(int rm, int rn, const HalfGemmArgs& a, int64_t r0, int64_t i0) {
    switch (rm) {
        case 3: return tile_with_group<BF16, 3>(rn, a, r0, i0);
        case 2: return tile_with_group<BF16, 2>(rn, a, r0, i0);
        default: return tile_with_group<BF16, 1>(rn, a, r0, i0);
    }
}

constexpr int kChunk = avx512_tuning::kHalfGemmChunkElements;  // elements of each weight row widened at a time (wide path)

// buf[m][kk] = w[r0 + m][l0 + kk] for m < rm, kk < kc (rows past rm: zero, never read).
template <bool BF16, int RM>
void widen_chunk(const HalfGemmArgs& a, int64_t r0, int rm, int64_t l0, int kc, float (&buf)[RM][kChunk]) {
    for (int m = 0; m < RM; ++m) {
        const uint8_t* row = a.weights + static_cast<uint64_t>(r0 + m) * a.weight_row_bytes;
        for (int kk = 0; kk < kc; kk += 16) {
            const __m512 v = m < rm ? load_weights<BF16>(row, l0 + kk, first_lanes(kc - kk)) : _mm512_setzero_ps();
            _mm512_store_ps(&buf[m][kk], v);
        }
    }
}

// The next tile's weights (rows [r0, r0 + rows): one contiguous block) are requested while
// the current tile computes, in address order, a few cache lines per element step: the tile
// reads each of its rows a chunk at a time, too many short streams for the hardware
// prefetchers to follow, and a burst of requests would overflow the miss queues.
class NextTilePrefetch {
public:
    // Part `part` of `parts` of the block, spread over `steps` calls of step().
    NextTilePrefetch(const HalfGemmArgs& a, int64_t r0, int64_t rows, int64_t part, int64_t parts, int steps) {
        if (rows <= 0) return;
        block_ = a.weights + static_cast<uint64_t>(r0) * a.weight_row_bytes;
        const uint64_t lines = (static_cast<uint64_t>(rows) * a.weight_row_bytes + 63) / 64;
        next_ = lines * static_cast<uint64_t>(part) / static_cast<uint64_t>(parts);
        end_ = lines * static_cast<uint64_t>(part + 1) / static_cast<uint64_t>(parts);
        per_step_ = (end_ - next_ + static_cast<uint64_t>(steps) - 1) / static_cast<uint64_t>(steps);
    }
    void step() {
        for (uint64_t i = 0; i < per_step_ && next_ < end_; ++i, ++next_) {
            _mm_prefetch(reinterpret_cast<const char*>(block_ + 64 * next_), _MM_HINT_T0);
        }
    }

private:
    const uint8_t* block_ = nullptr;
    uint64_t next_ = 0, end_ = 0, per_step_ = 0;
};

// G consecutive weights of one row in every G-lane group of a vector.
template <int G>
inline __m512 broadcast_weights(const float* w) {
    if constexpr (G == 1) return _mm512_set1_ps(*w);
    if constexpr (G == 2) {
        double pair;
        __builtin_memcpy(&pair, w, sizeof pair);
        return _mm512_castpd_ps(_mm512_set1_pd(pair));
    }
}

// Lane s * G of the result: the sum of lanes s * G .. s * G + G - 1 of v.
template <int G>
inline __m512 add_lane_groups(__m512 v) {
    if constexpr (G == 2) v = _mm512_add_ps(v, _mm512_permute_ps(v, 0xB1));  // [1 0 3 2] in each 128 bits
    return v;
}

// Rows [r0, r0 + rm) (rm <= RM) against all n activation rows: NV vectors of 16 / G rows x
// G elements per element group (the layout of half_gemm.h).
template <bool BF16, int G, int NV, int RM>
void wide_tile(const HalfGemmArgs& a, int64_t r0, int rm) {
    static_assert((G == 1 || G == 2) && kChunk % 16 == 0);
    constexpr int kRowsPerVector = 16 / G;
    const int64_t element_groups = (a.k + G - 1) / G;
    alignas(64) float buf[RM][kChunk];
    __m512 acc[RM][NV];
#pragma GCC unroll 24
    for (int m = 0; m < RM; ++m) {
#pragma GCC unroll 4
        for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_setzero_ps();
    }
    for (int64_t l0 = 0; l0 < a.k; l0 += kChunk) {
        const int kc = static_cast<int>(a.k - l0 < kChunk ? a.k - l0 : kChunk);
        widen_chunk<BF16, RM>(a, r0, rm, l0, kc, buf);  // zero past kc up to a multiple of 16
        const int64_t next_rows = a.row_end - (r0 + RM) < RM ? a.row_end - (r0 + RM) : RM;
        NextTilePrefetch prefetch(a, r0 + RM, next_rows, l0 / kChunk, (a.k + kChunk - 1) / kChunk, (kc + G - 1) / G);
        const float* xe = a.xt + (l0 / G) * 16;
        for (int kk = 0; kk < kc; kk += G, xe += 16) {
            prefetch.step();
            __m512 xv[NV];
#pragma GCC unroll 4
            for (int v = 0; v < NV; ++v) xv[v] = _mm512_loadu_ps(xe + v * element_groups * 16);
#pragma GCC unroll 24
            for (int m = 0; m < RM; ++m) {
                __m512 w = broadcast_weights<G>(&buf[m][kk]);
                __asm__("" : "+v"(w));
#pragma GCC unroll 4
                for (int v = 0; v < NV; ++v) acc[m][v] = _mm512_fmadd_ps(w, xv[v], acc[m][v]);
            }
        }
    }
    // Lane s * G of vector v holds output row (activation row) kRowsPerVector * v + s.
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i lane_offsets = _mm512_mullo_epi32(_mm512_srli_epi32(lane, G - 1), _mm512_set1_epi32(static_cast<int>(a.ldc)));
    const __mmask16 group_starts = G == 1 ? 0xFFFF : 0x5555;
    for (int v = 0; v < NV; ++v) {
        const __mmask16 mask = group_starts & first_lanes((a.n - kRowsPerVector * v) * G);
        float* base = a.c + kRowsPerVector * v * a.ldc + r0;
        for (int m = 0; m < rm; ++m) _mm512_mask_i32scatter_ps(base + m, mask, lane_offsets, add_lane_groups<G>(acc[m][v]), 4);
    }
}

template <bool BF16, int G, int NV, int RM>
void wide_rows(const HalfGemmArgs& a) {
    for (int64_t r0 = a.row_begin; r0 < a.row_end; r0 += RM) {
        wide_tile<BF16, G, NV, RM>(a, r0, static_cast<int>(a.row_end - r0 < RM ? a.row_end - r0 : RM));
    }
}

// 24 accumulators: RM = 24 / NV weight rows per tile.
template <bool BF16>
void wide(const HalfGemmArgs& a) {
    const HalfGemmWideLayout layout = half_gemm_wide_layout(a.n);
    if (layout.lane_group == 2) return layout.vectors == 2 ? wide_rows<BF16, 2, 2, 12>(a) : wide_rows<BF16, 2, 3, 8>(a);
    switch (layout.vectors) {
        case 1: return wide_rows<BF16, 1, 1, 24>(a);
        case 2: return wide_rows<BF16, 1, 2, 12>(a);
        case 3: return wide_rows<BF16, 1, 3, 8>(a);
        default: return wide_rows<BF16, 1, 4, 6>(a);
    }
}

// With more than one group, each group runs over a block of kRowBlock weight rows before the
// next group does: the block's weights then come from L2 for the later groups, and a
// group's activation rows stay in L1.
constexpr int64_t kRowBlock = avx512_tuning::kHalfGemmRowBlock;

// Activation rows are split into groups of equal size (at most kMaxGroup, differing by at
// most one), so that 12 rows run as 6 + 6 rather than 8 + 4.
template <bool BF16>
void half_gemm(const HalfGemmArgs& a) {
    if (a.n <= 0 || a.row_begin >= a.row_end) return;
    if (a.n >= kHalfGemmWideFrom && a.n <= kHalfGemmMaxRows && a.xt != nullptr) return wide<BF16>(a);
    const int64_t groups = (a.n + kMaxGroup - 1) / kMaxGroup;
    for (int64_t rb = a.row_begin; rb < a.row_end; rb += kRowBlock) {
        const int64_t rb_end = a.row_end - rb < kRowBlock ? a.row_end : rb + kRowBlock;
        int64_t i0 = 0;
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t i1 = a.n * (g + 1) / groups;
            for (int64_t r0 = rb; r0 < rb_end; r0 += kRows) {
                run_tile<BF16>(static_cast<int>(rb_end - r0 < kRows ? rb_end - r0 : kRows), static_cast<int>(i1 - i0), a, r0, i0);
            }
            i0 = i1;
        }
    }
}

}  // namespace

void avx512_round_to_half(GgmlType type, const float* x, int64_t count, float* out) {
    const bool bf16 = type == GgmlType::BF16;
    for (int64_t i = 0; i < count; i += 16) {
        const __mmask16 mask = first_lanes(count - i);
        const __m512 v = _mm512_maskz_loadu_ps(mask, x + i);
        __m512 rounded;
        if (bf16) {  // round to nearest even at bit 16; NaN made quiet, as fp32_to_bf16 does
            const __m512i bits = _mm512_castps_si512(v);
            const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
            __m512i r = _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7FFF), odd));
            r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_or_si512(bits, _mm512_set1_epi32(0x400000)));
            rounded = _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
        } else {
            rounded = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        }
        _mm512_mask_storeu_ps(out + i, mask, rounded);
    }
}

HalfGemmFn avx512_half_gemm_kernel(GgmlType weight_type) {
    if (!cpu_supports(CpuIsa::Avx512)) return nullptr;
    return weight_type == GgmlType::BF16 ? &half_gemm<true> : &half_gemm<false>;
}

}  // namespace inferscope::simd
