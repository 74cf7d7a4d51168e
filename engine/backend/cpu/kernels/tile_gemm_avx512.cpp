// avx512 tiled GEMM kernels. Compiled with avx512 flags (see engine/CMakeLists.txt):
// everything stays in an anonymous namespace.
//
// Layout ("outer product" register blocking, as in BLAS micro-kernels rather than
// llamafile's dot-product tiles): a panel of 32..80 weight rows is repacked, one k chunk at a
// time, into a stack buffer where each 64-byte vector holds the same k position(s) of 16
// consecutive rows. The micro-kernel keeps MZ x RN accumulators (MZ vectors of 16 rows times
// RN activation rows) in registers, loads MZ weight vectors per k step and broadcasts one
// 4-byte piece of each activation row, so that
//   * every lane is one output: no horizontal sums, results are stored as contiguous runs
//     of c (one masked store per vector at the panel's end), and
//   * for the quantized types the per-block float work (convert, scale, accumulate) is paid
//     once per 16 outputs and 32 products instead of once per 16 products.
// k is processed in chunks (each chunk's sums are added to c), which also bounds every
// float summation chain to the chunk length plus the number of chunks.
//
// Per type (tile shapes and chunks: tuning_avx512.h):
//   F16   Weights converted to F32 when packed; each tile of
//         activation rows converted to F32 right before its micro-kernel (F32 FMA).
//   BF16  Pairs of BF16 packed per lane; VDPBF16PS with the activation
//         pair broadcast straight from the row (needs AVX512_BF16).
//   Q8_0, Q4_0, Q5_0, IQ4_NL: signed weight values packed per lane; the
//         activation bytes are broadcast and flipped to unsigned (x + 128) for VPDPBUSD, and
//         -128 * sum(w) per block, computed when packing, starts each block's integer sum.
//   Q4_1, Q5_1: unsigned weight values, no correction; the min term
//         m_w * s_x is one more FMA.
//   K-quants: unsigned weight values; VPDPBUSD with the activation
//         bytes broadcast as the signed operand; the offset (Q6_K: 32, Q3_K: 4) comes in
//         through Q8_K's bsums as the start of each group's integer sum, and the mins
//         (Q4_K, Q5_K, Q2_K) as one FMA per group with the float group sum. IQ4_XS packs its
//         levels + 128 (from a byte shuffle by nibble) and takes the 128 off like Q6_K's 32.
// The quantized types need AVX512_VNNI. Integer sums within a block or group are exact; the
// float steps differ from the scalar reference only in rounding order.
//
// Scratch: one fixed-size object on the stack per call (largest: Q8_0/Q4_0/Q5_0's, half of
// it the activation scales of tuning::kTileActivationRows rows). No heap, no state kept
// between calls; weights are only read.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/backend/cpu/kernels/tile_gemm_driver.h"
#include "engine/backend/cpu/kernels/tile_gemm_micro.h"
#include "engine/backend/cpu/kernels/tuning_avx512.h"
#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/super_block_unpack.h"
#include "engine/formats/block_layouts.h"

namespace inferscope::simd {
namespace {

namespace tuning = avx512_tuning;
using tuning::TileShape;

// Where a micro-kernel writes its MZ x RN vectors: row i of c starts at c + i * ldc, the
// panel's first column is already added in; the last row vector may be partial.
struct Out {
    float* c;
    int64_t ldc;
    __mmask16 last_mask;
    bool accumulate;  // add to what earlier k chunks stored
};

inline void write_out(float* dst, __m512 v, __mmask16 mask, bool accumulate) {
    if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mask, dst));
    _mm512_mask_storeu_ps(dst, mask, v);
}

// 16 x 16 float transpose: r[t] holds row t; afterwards r[c] holds column c.
inline void transpose16x16(__m512 r[16]) {
    __m512 t[16];
#pragma GCC unroll 8
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m512 u[16];
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
        const __m512d a0 = _mm512_castps_pd(t[4 * q]), a1 = _mm512_castps_pd(t[4 * q + 1]);
        const __m512d a2 = _mm512_castps_pd(t[4 * q + 2]), a3 = _mm512_castps_pd(t[4 * q + 3]);
        u[4 * q + 0] = _mm512_castpd_ps(_mm512_unpacklo_pd(a0, a2));
        u[4 * q + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a0, a2));
        u[4 * q + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(a1, a3));
        u[4 * q + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(a1, a3));
    }
    // u[4q + c], 128-bit lane L: rows 4q..4q+3 at column 4L + c.
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        const __m512 p0 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0x44);
        const __m512 p1 = _mm512_shuffle_f32x4(u[c], u[4 + c], 0xEE);
        const __m512 q0 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0x44);
        const __m512 q1 = _mm512_shuffle_f32x4(u[8 + c], u[12 + c], 0xEE);
        r[c] = _mm512_shuffle_f32x4(p0, q0, 0x88);
        r[4 + c] = _mm512_shuffle_f32x4(p0, q0, 0xDD);
        r[8 + c] = _mm512_shuffle_f32x4(p1, q1, 0x88);
        r[12 + c] = _mm512_shuffle_f32x4(p1, q1, 0xDD);
    }
}

// 16 rows x 8 dwords (32 bytes per row, rows `stride` bytes apart) -> out[g] = dword g of
// rows 0..15, row t in lane t.
inline void transpose16x8_dwords(const uint8_t* src, int stride, __m512i out[8]) {
    __m512i z[8];
#pragma GCC unroll 8
    for (int p = 0; p < 8; ++p) {
        const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + p * stride));
        const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + (p + 8) * stride));
        z[p] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
    }
    __m512i t[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm512_unpacklo_epi32(z[2 * i], z[2 * i + 1]);
        t[2 * i + 1] = _mm512_unpackhi_epi32(z[2 * i], z[2 * i + 1]);
    }
    __m512i u[8];
#pragma GCC unroll 8
    for (int q = 0; q < 2; ++q) {
        u[4 * q + 0] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
        u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
        u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
    }
    // u[4q + d], 128-bit lane 2H + s: rows 4q..4q+3 (+8H) at dword 4s + d.
    const __m512i even = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    const __m512i odd = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
#pragma GCC unroll 4
    for (int d = 0; d < 4; ++d) {
        out[d] = _mm512_permutex2var_epi64(u[d], even, u[4 + d]);
        out[4 + d] = _mm512_permutex2var_epi64(u[d], odd, u[4 + d]);
    }
}

// The AVX-512 side of tile_gemm_driver.h and tile_gemm_micro.h: 16 rows per vector, a panel's
// last row vector stored through a lane mask.
struct Avx512Tile {
    static constexpr int kLanes = 16;
    static constexpr auto rows_mask = &first_lanes;
    using Vec = __m512;
    static Out out(float* c, int64_t ldc, int, __mmask16 last_mask, bool accumulate) { return {c, ldc, last_mask, accumulate}; }
    static void store(const Out& out, float* dst, __m512 v, bool last_vector) {
        write_out(dst, v, last_vector ? out.last_mask : static_cast<__mmask16>(0xFFFF), out.accumulate);
    }
    static __m512 zero() { return _mm512_setzero_ps(); }
    static __m512 load(const float* p) { return _mm512_load_ps(p); }
    static void store_aligned(float* p, __m512 v) { _mm512_store_ps(p, v); }
    static __m512 broadcast(const float* p) { return _mm512_set1_ps(*p); }
    static __m512 fmadd(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
    static __m512 mul(__m512 a, __m512 b) { return _mm512_mul_ps(a, b); }
    static __m512 to_float(__m512i v) { return _mm512_cvtepi32_ps(v); }
    static __m512 load_halves(const uint8_t* p, int count) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(first_lanes(count), p));
    }
    static void transpose(__m512 (&rows)[16]) { transpose16x16(rows); }
};

// ================================================================== F16 (tile_gemm_micro.h)

using F16TileKind = F16Kind<Avx512Tile, tuning::kF16Tile.weight_vectors, tuning::kF16Tile.activation_rows,
                            tuning::kF16ChunkElements>;

// ================================================================== BF16

template <TileShape Shape = tuning::kBf16Tile, int KC_ = tuning::kBf16ChunkElements>
struct Bf16Kind {
    static constexpr int kMZ = Shape.weight_vectors;
    static constexpr int kChunk = KC_;  // k elements per packed chunk (pairs: half that)
    static constexpr int kTileN = Shape.activation_rows;
    static int64_t act_offset(int64_t k0) { return 2 * k0; }
    static int act_bytes(int kc) { return 2 * kc; }
    static int64_t weight_offset(int64_t k0) { return 2 * k0; }
    static int weight_bytes(int kc) { return 2 * kc; }
    struct Scratch {
        alignas(64) uint8_t w[kChunk / 2][kMZ][64];  // [pair][16-row vector][16 lanes x 2 bf16]
        const uint8_t* x[kTileN];                  // activation rows at k0
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int kc, Scratch& s) {
        const int pairs = (kc + 1) / 2;
        for (int m = 0; m * 16 < nr; ++m) {
            const int rows = imin(16, nr - 16 * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + 16 * m) * a.weight_row_bytes + k0 * 2;
            // 8 pairs (16 elements, 32 bytes) of 16 rows at a time.
            for (int p0 = 0; p0 < pairs; p0 += 8) {
                const int elems = imin(16, kc - 2 * p0);
                alignas(64) uint16_t tmp[16][16];
                const __mmask16 km = first_lanes(elems);
                for (int t = 0; t < 16; ++t) {
                    const __m256i v = t < rows ? _mm256_maskz_loadu_epi16(
                                                     km, base + static_cast<uint64_t>(t) * a.weight_row_bytes + p0 * 4)
                                               : _mm256_setzero_si256();
                    _mm256_store_si256(reinterpret_cast<__m256i*>(tmp[t]), v);
                }
                __m512i out[8];
                transpose16x8_dwords(reinterpret_cast<const uint8_t*>(tmp), 32, out);
                const int count = imin(8, pairs - p0);
                for (int g = 0; g < count; ++g) _mm512_store_si512(s.w[p0 + g][m], out[g]);
            }
        }
    }

    static void prepare(const TileGemmArgs& a, int64_t i0, int rn, int64_t k0, int, Scratch& s) {
        for (int j = 0; j < rn; ++j) s.x[j] = a.activations + static_cast<uint64_t>(i0 + j) * a.activation_row_bytes + k0 * 2;
    }

    template <int MZ, int RN>
    static void compute(const Scratch& s, int kc, int, const Out& out) {
        __m512 acc[MZ][RN];
        fill_tile(acc, _mm512_setzero_ps());
        const uint8_t* x[RN];
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) x[j] = s.x[j];
        const int full = kc / 2;
        auto step = [&](int p, const __m512i (&xv)[RN]) __attribute__((always_inline)) {
            __m512bh w[MZ];
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) w[m] = (__m512bh)_mm512_load_si512(s.w[p][m]);
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) {
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) acc[m][j] = _mm512_dpbf16_ps(acc[m][j], w[m], (__m512bh)xv[j]);
            }
        };
#pragma GCC unroll 2
        for (int p = 0; p < full; ++p) {
            __m512i xv[RN];
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) xv[j] = _mm512_set1_epi32(load_i32(x[j] + 4 * p));
            step(p, xv);
        }
        if (kc & 1) {  // the last element alone: read 2 bytes, not 4 (the row may end there)
            __m512i xv[RN];
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) xv[j] = _mm512_set1_epi32(load_u16(x[j] + 4 * full));
            step(full, xv);
        }
        store_tile<Avx512Tile>(out, acc);
    }
};

// ================================================================== legacy 32-element blocks

// Decoders: one weight block -> 32 int8 values in element order, its scale (and min).
// kSigned: values are signed (Q4_0, Q5_0, Q8_0) and go through the x + 128 trick; otherwise
// unsigned (Q4_1, Q5_1) with a min term against Q8_1's s.
struct DecQ4_0 {
    static constexpr int kBytes = block_layouts::kQ4_0;
    static constexpr bool kSigned = true, kHasMin = false;
    static __m256i values(const uint8_t* b) {
        return _mm256_sub_epi8(block_nibbles(b + 2), _mm256_set1_epi8(8));
    }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t*) { return 0; }
};
struct DecQ4_1 {
    static constexpr int kBytes = block_layouts::kQ4_1;
    static constexpr bool kSigned = false, kHasMin = true;
    static __m256i values(const uint8_t* b) { return block_nibbles(b + 4); }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t* b) { return load_u16(b + 2); }
};
inline __m256i q5_values(const uint8_t* qh_ptr, const uint8_t* qs_ptr) {
    const __m256i low = block_nibbles(qs_ptr);
    const uint32_t qh = static_cast<uint32_t>(load_i32(qh_ptr));
    const __m256i high = _mm256_and_si256(_mm256_movm_epi8(qh), _mm256_set1_epi8(0x10));
    return _mm256_or_si256(low, high);
}
struct DecQ5_0 {
    static constexpr int kBytes = block_layouts::kQ5_0;
    static constexpr bool kSigned = true, kHasMin = false;
    static __m256i values(const uint8_t* b) { return _mm256_sub_epi8(q5_values(b + 2, b + 6), _mm256_set1_epi8(16)); }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t*) { return 0; }
};
struct DecQ5_1 {
    static constexpr int kBytes = block_layouts::kQ5_1;
    static constexpr bool kSigned = false, kHasMin = true;
    static __m256i values(const uint8_t* b) { return q5_values(b + 4, b + 8); }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t* b) { return load_u16(b + 2); }
};
struct DecQ8_0 {
    static constexpr int kBytes = block_layouts::kQ8_0;
    static constexpr bool kSigned = true, kHasMin = false;
    static __m256i values(const uint8_t* b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)); }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t*) { return 0; }
};

struct DecIQ4_NL {  // Q4_0's layout, signed levels instead of q - 8
    static constexpr int kBytes = block_layouts::kIQ4_NL;
    static constexpr bool kSigned = true, kHasMin = false;
    static __m256i values(const uint8_t* b) { return iq4_group(b + 2, iq4_levels<0>()); }
    static uint16_t d(const uint8_t* b) { return load_u16(b); }
    static uint16_t m(const uint8_t*) { return 0; }
};

template <class Dec, TileShape Shape = tuning::kLegacyTile,
          int KB_ = Dec::kHasMin ? tuning::kLegacyWithMinChunkBlocks : tuning::kLegacyChunkBlocks>
struct LegacyKind {
    static constexpr int kMZ = Shape.weight_vectors;
    static constexpr int kBlocks = KB_;  // blocks per packed chunk
    static constexpr int kChunk = 32 * kBlocks;
    static constexpr int kTileN = Shape.activation_rows;  // MZ x RN float + MZ x RN integer accumulators
    static constexpr int kMaxN = tuning::kTileActivationRows;  // activation rows whose scales are prepared at once
    static constexpr int kPanelsPerBlock = tuning::kLegacyPanelsPerBlock;
    // Activation blocks: Q8_1 (d, s, qs) for the formats with a min, Q8_0 (d, qs) otherwise.
    static constexpr int kActBytes = Dec::kHasMin ? block_layouts::kQ8_1 : block_layouts::kQ8_0;
    static constexpr int kActQs = Dec::kHasMin ? 4 : 2;
    static int64_t act_offset(int64_t k0) { return k0 / 32 * kActBytes; }
    static int act_bytes(int kc) { return kc / 32 * kActBytes; }
    static int64_t weight_offset(int64_t k0) { return k0 / 32 * Dec::kBytes; }
    static int weight_bytes(int kc) { return kc / 32 * Dec::kBytes; }
    struct Scratch {
        alignas(64) uint8_t w[kBlocks][8][kMZ][64];  // [block][dword][16-row vector][lanes]
        alignas(64) int32_t corr[kBlocks][kMZ][16];   // -128 * sum(values) (signed formats)
        alignas(64) float dw[kBlocks][kMZ][16];
        alignas(64) float mw[Dec::kHasMin ? kBlocks : 1][kMZ][16];  // mins
        alignas(64) float dx[kMaxN][kBlocks];                       // activation scales
        alignas(64) float sx[Dec::kHasMin ? kMaxN : 1][kBlocks];    // Q8_1's s
        const uint8_t* x0;  // the first prepared activation row, at the chunk's first block
        uint64_t stride;
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int kc, Scratch& s) {
        const int kb = kc / 32;
        const int64_t b0 = k0 / 32;
        const __m512i ones = _mm512_set1_epi8(1);
        for (int m = 0; m * 16 < nr; ++m) {
            const int rows = imin(16, nr - 16 * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + 16 * m) * a.weight_row_bytes + b0 * Dec::kBytes;
            for (int b = 0; b < kb; ++b) {
                alignas(64) uint8_t tmp[16][32];
                alignas(32) uint16_t dh[16];
                alignas(32) uint16_t mh[16];
                for (int t = 0; t < 16; ++t) {
                    if (t < rows) {
                        const uint8_t* blk = base + static_cast<uint64_t>(t) * a.weight_row_bytes + b * Dec::kBytes;
                        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp[t]), Dec::values(blk));
                        dh[t] = Dec::d(blk);
                        mh[t] = Dec::m(blk);
                    } else {
                        _mm256_store_si256(reinterpret_cast<__m256i*>(tmp[t]), _mm256_setzero_si256());
                        dh[t] = 0;
                        mh[t] = 0;
                    }
                }
                __m512i out[8];
                transpose16x8_dwords(&tmp[0][0], 32, out);
                __m512i sum = _mm512_setzero_si512();
#pragma GCC unroll 8
                for (int g = 0; g < 8; ++g) {
                    _mm512_store_si512(s.w[b][g][m], out[g]);
                    if constexpr (Dec::kSigned) sum = _mm512_dpbusd_epi32(sum, ones, out[g]);
                }
                if constexpr (Dec::kSigned) {
                    _mm512_store_si512(s.corr[b][m], _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(sum, 7)));
                }
                _mm512_store_ps(s.dw[b][m], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(dh))));
                if constexpr (Dec::kHasMin) {
                    _mm512_store_ps(s.mw[b][m], _mm512_cvtph_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mh))));
                }
            }
        }
    }

    // The activation blocks' scales (and Q8_1's s) as floats, for rows n0 .. n0 + nn.
    static void prepare(const TileGemmArgs& a, int64_t n0, int nn, int64_t k0, int kc, Scratch& s) {
        prepare_block_scales<Dec::kHasMin>(a, n0, nn, k0, kc, kActBytes, s);
    }

    template <int MZ, int RN>
    static void compute(const Scratch& s, int kc, int i0, const Out& out) {
        const int kb = kc / 32;
        __m512 acc[MZ][RN];
        fill_tile(acc, _mm512_setzero_ps());
        const uint8_t* x[RN];
        tile_activation_rows(s, i0, kActQs, x);
        const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
        for (int b = 0; b < kb; ++b) {
            __m512i ia[MZ][RN];
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) {
                const __m512i init = Dec::kSigned ? _mm512_load_si512(s.corr[b][m]) : _mm512_setzero_si512();
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) ia[m][j] = init;
            }
#pragma GCC unroll 8
            for (int g = 0; g < 8; ++g) {
                __m512i w[MZ];
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) w[m] = _mm512_load_si512(s.w[b][g][m]);
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) {
                    const __m512i xv = _mm512_set1_epi32(load_i32(x[j] + b * kActBytes + 4 * g));
                    if constexpr (Dec::kSigned) {
                        const __m512i xu = _mm512_xor_si512(xv, flip);  // x + 128, unsigned
#pragma GCC unroll 8
                        for (int m = 0; m < MZ; ++m) ia[m][j] = _mm512_dpbusd_epi32(ia[m][j], xu, w[m]);
                    } else {
#pragma GCC unroll 8
                        for (int m = 0; m < MZ; ++m) ia[m][j] = _mm512_dpbusd_epi32(ia[m][j], w[m], xv);
                    }
                }
            }
            add_block_sums<Avx512Tile>(acc, ia, s.dw[b][0], &s.dx[i0][b], kBlocks);
            if constexpr (Dec::kHasMin) add_min_terms<Avx512Tile>(acc, s.mw[b][0], &s.sx[i0][b], kBlocks);
        }
        store_tile<Avx512Tile>(out, acc);
    }
};

// ================================================================== K-quants (256-element super-blocks, Q8_K activations)

// The decoders (DecQ4_K ... DecIQ4_XS) are in super_block_unpack.h.

template <class Dec, TileShape Shape = tuning::kKQuantTile, int KS_ = tuning::kKQuantChunkSuperBlocks>
struct KQuantKind {
    static constexpr int kMZ = Shape.weight_vectors;
    static constexpr int kSuper = KS_;  // super-blocks per packed chunk
    static constexpr int kChunk = 256 * kSuper;
    static constexpr int kTileN = Shape.activation_rows;  // MZ x RN accumulators, block sums and integer sums each
    static constexpr int kMaxN = tuning::kTileActivationRows;  // activation rows whose block data are prepared at once
    static constexpr int kPanelsPerBlock = tuning::kKQuantPanelsPerBlock;
    static constexpr int kGroups = 256 / Dec::kGroup;
    static constexpr int kGroupDwords = Dec::kGroup / 4;
    static constexpr int kActBytes = block_layouts::kQ8_K;
    static int64_t act_offset(int64_t k0) { return k0 / 256 * kActBytes; }
    static int act_bytes(int kc) { return kc / 256 * kActBytes; }
    static int64_t weight_offset(int64_t k0) { return k0 / 256 * Dec::kBytes; }
    static int weight_bytes(int kc) { return kc / 256 * Dec::kBytes; }
    struct Scratch {
        alignas(64) uint8_t w[kSuper][64][kMZ][64];  // [super-block][dword][16-row vector][lanes]
        alignas(64) float scale[kSuper][kGroups][kMZ][16];
        alignas(64) float min[Dec::kHasMin ? kSuper : 1][kGroups][kMZ][16];
        alignas(64) float dx[kMaxN][kSuper];
        alignas(64) int32_t binit[Dec::kOffset != 0 ? kMaxN : 1][kSuper][kGroups];  // -offset * group sum of x
        alignas(64) float bsum[Dec::kHasMin ? kMaxN : 1][kSuper][kGroups];          // -group sum of x (mins)
        const uint8_t* x0;  // the first prepared activation row, at the chunk's first block
        uint64_t stride;
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int kc, Scratch& s) {
        const int kb = kc / 256;
        const int64_t b0 = k0 / 256;
        for (int m = 0; m * 16 < nr; ++m) {
            const int rows = imin(16, nr - 16 * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + 16 * m) * a.weight_row_bytes + b0 * Dec::kBytes;
            for (int b = 0; b < kb; ++b) {
                alignas(64) uint8_t tmp[16][256];
                alignas(64) float scale[16][kGroups];
                alignas(64) float min[16][kGroups];
                unpack_super_blocks<Dec>(base + b * Dec::kBytes, a.weight_row_bytes, rows, tmp, scale, min);
                for (int sub = 0; sub < 8; ++sub) {
                    __m512i out[8];
                    transpose16x8_dwords(&tmp[0][32 * sub], 256, out);
#pragma GCC unroll 8
                    for (int g = 0; g < 8; ++g) _mm512_store_si512(s.w[b][8 * sub + g][m], out[g]);
                }
                pack_group_scales<Dec::kHasMin>(scale, min, m, s.scale[b], s.min[Dec::kHasMin ? b : 0]);
            }
        }
    }

    // Per activation super-block: its scale, and from Q8_K's bsums (sums of 16 values) the
    // group sums as -offset * sum (integer) and -sum (float, for the mins).
    static void prepare(const TileGemmArgs& a, int64_t n0, int nn, int64_t k0, int kc, Scratch& s) {
        const int kb = kc / 256;
        start_activation_chunk(a, n0, (k0 / 256) * kActBytes, s);
        for (int j = 0; j < nn; ++j) {
            const uint8_t* row = s.x0 + static_cast<uint64_t>(j) * s.stride;
            for (int b = 0; b < kb; ++b) {
                const uint8_t* blk = row + b * kActBytes;
                s.dx[j][b] = load_f32(blk);
                const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 260));
                if constexpr (Dec::kGroup == 16) {
                    const __m512i sums = _mm512_cvtepi16_epi32(bsums);
                    if constexpr (Dec::kOffset != 0) {
                        _mm512_storeu_si512(s.binit[j][b], _mm512_mullo_epi32(sums, _mm512_set1_epi32(-Dec::kOffset)));
                    }
                    if constexpr (Dec::kHasMin) {
                        _mm512_storeu_ps(s.bsum[j][b], _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_setzero_si512(), sums)));
                    }
                } else {
                    static_assert(Dec::kGroup == 32);
                    const __m256i sums = _mm256_madd_epi16(bsums, _mm256_set1_epi16(1));
                    if constexpr (Dec::kOffset != 0) {
                        _mm256_storeu_si256(reinterpret_cast<__m256i*>(s.binit[j][b]),
                                            _mm256_mullo_epi32(sums, _mm256_set1_epi32(-Dec::kOffset)));
                    }
                    if constexpr (Dec::kHasMin) {
                        _mm256_storeu_ps(s.bsum[j][b], _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), sums)));
                    }
                }
            }
        }
    }

    template <int MZ, int RN>
    static void compute(const Scratch& s, int kc, int i0, const Out& out) {
        const int kb = kc / 256;
        __m512 acc[MZ][RN];
        fill_tile(acc, _mm512_setzero_ps());
        for (int b = 0; b < kb; ++b) {
            const uint8_t* x[RN];
            tile_activation_rows(s, i0, b * kActBytes + 4, x);
            __m512 sb[MZ][RN];  // this super-block's sum, before the activation scale
            fill_tile(sb, _mm512_setzero_ps());
            for (int g = 0; g < kGroups; ++g) {
                __m512i ia[MZ][RN];
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) {
                    const __m512i init = Dec::kOffset != 0 ? _mm512_set1_epi32(s.binit[i0 + j][b][g]) : _mm512_setzero_si512();
#pragma GCC unroll 8
                    for (int m = 0; m < MZ; ++m) ia[m][j] = init;
                }
#pragma GCC unroll 8
                for (int q = 0; q < kGroupDwords; ++q) {
                    const int dw = g * kGroupDwords + q;
                    __m512i w[MZ];
#pragma GCC unroll 8
                    for (int m = 0; m < MZ; ++m) w[m] = _mm512_load_si512(s.w[b][dw][m]);
#pragma GCC unroll 32
                    for (int j = 0; j < RN; ++j) {
                        const __m512i xv = _mm512_set1_epi32(load_i32(x[j] + 4 * dw));
#pragma GCC unroll 8
                        for (int m = 0; m < MZ; ++m) ia[m][j] = _mm512_dpbusd_epi32(ia[m][j], w[m], xv);
                    }
                }
                add_group_sums<Avx512Tile>(sb, ia, s.scale[b][g][0]);
                if constexpr (Dec::kHasMin) add_min_terms<Avx512Tile>(sb, s.min[b][g][0], &s.bsum[i0][b][g], kSuper * kGroups);
            }
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) acc[m][j] = _mm512_fmadd_ps(sb[m][j], _mm512_set1_ps(s.dx[i0 + j][b]), acc[m][j]);
            }
        }
        store_tile<Avx512Tile>(out, acc);
    }
};

}  // namespace

TileGemmFn avx512_tile_gemm_kernel(GgmlType weight_type) {
    const CpuFeatures& f = cpu_features();
    if (!cpu_supports(CpuIsa::Avx512)) return nullptr;
    switch (weight_type) {
        case GgmlType::F16: return panels_kernel<Avx512Tile, F16TileKind>;
        case GgmlType::BF16: return f.avx512bf16 ? panels_kernel<Avx512Tile, Bf16Kind<>> : nullptr;
        default: break;
    }
    if (!f.avx512vnni) return nullptr;
    switch (weight_type) {
        case GgmlType::Q4_0: return blocked_kernel<Avx512Tile, LegacyKind<DecQ4_0>>;
        case GgmlType::Q4_1: return blocked_kernel<Avx512Tile, LegacyKind<DecQ4_1>>;
        case GgmlType::Q5_0: return blocked_kernel<Avx512Tile, LegacyKind<DecQ5_0>>;
        case GgmlType::Q5_1: return blocked_kernel<Avx512Tile, LegacyKind<DecQ5_1>>;
        case GgmlType::Q8_0: return blocked_kernel<Avx512Tile, LegacyKind<DecQ8_0>>;
        case GgmlType::Q2_K: return blocked_kernel<Avx512Tile, KQuantKind<DecQ2_K>>;
        case GgmlType::Q3_K: return blocked_kernel<Avx512Tile, KQuantKind<DecQ3_K>>;
        case GgmlType::Q4_K: return blocked_kernel<Avx512Tile, KQuantKind<DecQ4_K>>;
        case GgmlType::Q5_K: return blocked_kernel<Avx512Tile, KQuantKind<DecQ5_K>>;
        case GgmlType::Q6_K: return blocked_kernel<Avx512Tile, KQuantKind<DecQ6_K>>;
        case GgmlType::IQ4_NL: return blocked_kernel<Avx512Tile, LegacyKind<DecIQ4_NL>>;
        case GgmlType::IQ4_XS: return blocked_kernel<Avx512Tile, KQuantKind<DecIQ4_XS>>;
        default: return nullptr;
    }
}

}  // namespace inferscope::simd
