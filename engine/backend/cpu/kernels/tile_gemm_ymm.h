#pragma once
// Tiled GEMM kernels on 256-bit vectors, compiled twice: with AVX2 flags
// (tile_gemm_avx2.cpp) and with AVX2 + AVX-VNNI (tile_gemm_avxvnni.cpp, __AVXVNNI__ defined).
// Everything stays in an anonymous namespace, so each copy keeps its own instructions.
//
// The scheme of tile_gemm_avx512.cpp (read its header comment) with 8-lane vectors and 16
// registers: panels of 8..24 weight rows are repacked per k chunk into a stack buffer so that
// each 32-byte vector holds the same k position(s) of 8 rows; the micro-kernel broadcasts 4
// bytes of each activation row against them. Without VNNI the byte products go through
// VPMADDUBSW (u8 x s8 -> i16 pair sums) and VPMADDWD (tile shapes and chunks per type:
// tuning_avx2.h):
//   F16: weights converted to F32 when packed, activations per tile; F32 FMA.
//   Q4_0, Q5_0: signed weights (|w| <= 16), activation bytes flipped to x + 128; the i16
//       pair sums (|.| <= 2 * 255 * 16) are added in i16 for 8 (Q4_0) or 4 (Q5_0) dwords
//       before widening, which cannot overflow, and -128 * sum(w) per block (from packing)
//       corrects the i32 sum.
//   Q8_0, IQ4_NL: |w| packed as the unsigned operand and the activation bytes given w's
//       signs (VPSIGNB); pair sums <= 2 * 128 * 127 fit i16; widened every dword.
//   K-quants, IQ4_XS (one super-block per chunk): unsigned values against Q8_K's signed
//       bytes, the offset (Q6_K: 32, Q3_K: 4) through the bsums and the mins as one FMA per
//       group; IQ4_XS with the sign trick. Group sums in float, scaled by the activation's d
//       once.
// With AVX-VNNI, VPDPBUSD adds the u8 x s8 products of each dword straight into i32 lanes:
// every legacy format takes the x + 128 path and IQ4_XS its levels + 128 with the offset
// through the bsums, with no i16 stage and no sign trick.
// Scratch: one fixed-size object on the stack per call (largest: Q8_0's, most of it the
// activation scales of tuning::kTileActivationRows rows).
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/backend/cpu/kernels/tile_gemm_driver.h"
#include "engine/backend/cpu/kernels/tile_gemm_micro.h"
#include "engine/backend/cpu/kernels/tuning_avx2.h"
#include "engine/backend/cpu/kernels/super_block_unpack.h"
#include "engine/formats/block_layouts.h"

namespace inferscope::simd {
namespace {

namespace tuning = avx2_tuning;
using tuning::TileShape;

#if defined(__AVXVNNI__)
constexpr bool kVnni = true;
// acc + the sums of each dword's four u8 x s8 products, exact in i32.
inline __m256i add_byte_products(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
#else
constexpr bool kVnni = false;
#endif

// The two ways the integer tiles add a dword's u8 x s8 byte products to an accumulator.
// In i32 with VPDPBUSD (a template, so that only the VNNI build names add_byte_products):
struct I32Products {
    template <class V>
    [[gnu::always_inline]] static V add(V acc, V u8, V s8) { return add_byte_products(acc, u8, s8); }
};
// As i16 pair sums, exact while few enough dwords are added before widening (kFlush):
struct I16Products {
    [[gnu::always_inline]] static __m256i add(__m256i acc, __m256i u8, __m256i s8) {
        return _mm256_add_epi16(acc, _mm256_maddubs_epi16(u8, s8));
    }
};

// Lanes [0, count) set, for partial row vectors.
inline __m256i lane_mask(int count) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

struct Out {
    float* c;
    int64_t ldc;
    int last_rows;  // valid rows (lanes) of the last row vector, 1..8
    __m256i last_mask;
    bool accumulate;  // add to what earlier k chunks stored
};

inline void write_out(float* dst, __m256 v, bool full, __m256i mask, bool accumulate) {
    if (full) {
        if (accumulate) v = _mm256_add_ps(v, _mm256_loadu_ps(dst));
        _mm256_storeu_ps(dst, v);
    } else {
        if (accumulate) v = _mm256_add_ps(v, _mm256_maskload_ps(dst, mask));
        _mm256_maskstore_ps(dst, mask, v);
    }
}

// 8 x 8 transpose of 32-bit elements: r[t] holds row t; afterwards r[c] holds column c.
inline void transpose8x8(__m256 r[8]) {
    __m256 t[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
        t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    __m256 u[8];
#pragma GCC unroll 8
    for (int q = 0; q < 2; ++q) {
        u[4 * q + 0] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
        u[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
        u[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
        u[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
    }
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
        r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
}

// 8 halves at p, or the first `count` of them and zeros.
inline __m256 load8_halves(const uint8_t* p, int count) {
    if (count >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    alignas(16) uint16_t tmp[8] = {};
    std::memcpy(tmp, p, static_cast<size_t>(count) * 2);
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
}

// The AVX2 side of tile_gemm_driver.h and tile_gemm_micro.h: 8 rows per vector, a panel's
// last row vector stored through a lane mask.
struct Avx2Tile {
    static constexpr int kLanes = 8;
    static constexpr auto rows_mask = &lane_mask;
    using Vec = __m256;
    static Out out(float* c, int64_t ldc, int last_rows, __m256i last_mask, bool accumulate) {
        return {c, ldc, last_rows, last_mask, accumulate};
    }
    static void store(const Out& out, float* dst, __m256 v, bool last_vector) {
        write_out(dst, v, !last_vector || out.last_rows == 8, out.last_mask, out.accumulate);
    }
    static __m256 zero() { return _mm256_setzero_ps(); }
    static __m256 load(const float* p) { return _mm256_load_ps(p); }
    static void store_aligned(float* p, __m256 v) { _mm256_store_ps(p, v); }
    static __m256 broadcast(const float* p) { return _mm256_broadcast_ss(p); }
    static __m256 fmadd(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
    static __m256 mul(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }
    static __m256 to_float(__m256i v) { return _mm256_cvtepi32_ps(v); }
    static __m256 load_halves(const uint8_t* p, int count) { return load8_halves(p, count); }
    static void transpose(__m256 (&rows)[8]) { transpose8x8(rows); }
};

// ================================================================== F16 (tile_gemm_micro.h)

using F16TileKind = F16Kind<Avx2Tile, tuning::kF16Tile.weight_vectors, tuning::kF16Tile.activation_rows,
                            tuning::kF16ChunkElements>;

// ================================================================== Q4_0, Q5_0, Q8_0

struct DecQ4_0 {
    static constexpr int kBytes = block_layouts::kQ4_0;
    static constexpr int kFlush = 8;  // dwords whose i16 pair sums may be added before widening
    static constexpr bool kSignTrick = false;
    static __m256i values(const uint8_t* b) {
        return _mm256_sub_epi8(block_nibbles(b + 2), _mm256_set1_epi8(8));
    }
};
struct DecQ5_0 {
    static constexpr int kBytes = block_layouts::kQ5_0;
    static constexpr int kFlush = 4;
    static constexpr bool kSignTrick = false;
    static __m256i values(const uint8_t* b) {
        const __m256i low = block_nibbles(b + 6);
        // Bit j of qh -> 0x10 in byte j: spread each of the 4 qh bytes over 8 bytes, test.
        const __m256i qh = _mm256_set1_epi32(load_i32(b + 2));
        const __m256i spread = _mm256_shuffle_epi8(
            qh, _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
        const __m256i bits = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
        const __m256i high = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bits), bits), _mm256_set1_epi8(0x10));
        return _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(16));
    }
};
struct DecQ8_0 {
    static constexpr int kBytes = block_layouts::kQ8_0;
    static constexpr bool kSignTrick = true;
    static __m256i values(const uint8_t* b) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2)); }
};
struct DecIQ4_NL {  // Q4_0's layout; the nibbles index the IQ4 levels (|w| <= 127: Q8_0's way)
    static constexpr int kBytes = block_layouts::kIQ4_NL;
    static constexpr bool kSignTrick = true;
    static __m256i values(const uint8_t* b) { return iq4_group(b + 2, iq4_levels<0>()); }
};

template <class Dec, TileShape Shape, int KB_ = tuning::kLegacyChunkBlocks>
struct LegacyKind {
    static constexpr int kMZ = Shape.weight_vectors;
    static constexpr int kBlocks = KB_;
    static constexpr int kChunk = 32 * kBlocks;
    static constexpr int kTileN = Shape.activation_rows;
    static constexpr int kMaxN = tuning::kTileActivationRows;  // activation rows whose scales are converted at once
    static constexpr int kPanelsPerBlock = tuning::kPanelsPerBlock;
    static constexpr int kActBytes = block_layouts::kQ8_0;
    static constexpr bool kSignTrick = Dec::kSignTrick && !kVnni;
    static int act_bytes(int kc) { return kc / 32 * kActBytes; }
    static int64_t weight_offset(int64_t k0) { return k0 / 32 * Dec::kBytes; }
    static int weight_bytes(int kc) { return kc / 32 * Dec::kBytes; }
    struct Scratch {
        alignas(32) uint8_t w[kBlocks][8][kMZ][32];  // signed values: [block][dword][8-row vector][lanes]
        alignas(32) uint8_t aw[kSignTrick ? kBlocks : 1][8][kMZ][32];  // |values| (sign trick)
        alignas(32) int32_t corr[kBlocks][kMZ][8];  // -128 * sum(values) (x + 128 trick)
        alignas(32) float dw[kBlocks][kMZ][8];
        alignas(32) float dx[kMaxN][kBlocks];
        const uint8_t* x0;  // the first prepared activation row, at the chunk's first block
        uint64_t stride;
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int kc, Scratch& s) {
        const int kb = kc / 32;
        const int64_t b0 = k0 / 32;
        const __m256i ones8 = _mm256_set1_epi8(1);
        const __m256i ones16 = _mm256_set1_epi16(1);
        for (int m = 0; m * 8 < nr; ++m) {
            const int rows = imin(8, nr - 8 * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + 8 * m) * a.weight_row_bytes + b0 * Dec::kBytes;
            for (int b = 0; b < kb; ++b) {
                __m256 v[8];
                alignas(32) float d[8];
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) {
                    if (t < rows) {
                        const uint8_t* blk = base + static_cast<uint64_t>(t) * a.weight_row_bytes + b * Dec::kBytes;
                        v[t] = _mm256_castsi256_ps(Dec::values(blk));
                        d[t] = half_to_float(load_u16(blk));
                    } else {
                        v[t] = _mm256_setzero_ps();
                        d[t] = 0.0f;
                    }
                }
                transpose8x8(v);
                __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int g = 0; g < 8; ++g) {
                    const __m256i q = _mm256_castps_si256(v[g]);
                    _mm256_store_si256(reinterpret_cast<__m256i*>(s.w[b][g][m]), q);
                    if constexpr (kSignTrick) {
                        _mm256_store_si256(reinterpret_cast<__m256i*>(s.aw[b][g][m]), _mm256_abs_epi8(q));
                    } else {
                        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, q), ones16));
                    }
                }
                if constexpr (!kSignTrick) {
                    _mm256_store_si256(reinterpret_cast<__m256i*>(s.corr[b][m]),
                                       _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sum, 7)));
                }
                _mm256_store_ps(s.dw[b][m], _mm256_load_ps(d));
            }
        }
    }

    static void prepare(const TileGemmArgs& a, int64_t n0, int nn, int64_t k0, int kc, Scratch& s) {
        prepare_block_scales<false>(a, n0, nn, k0, kc, kActBytes, s);
    }

    // The micro-kernel's pieces are forced inline: as separate functions GCC folds identical
    // instantiations of different kinds together and then warns about the other kind's bounds.
    // One block's i32 sums with VPDPBUSD: (x + 128) x w per dword, starting from -128 * sum(w).
    template <int MZ, int RN>
    [[gnu::always_inline]] static void vnni_block_sums(const Scratch& s, const uint8_t* const (&x)[RN], int b,
                                                       __m256i (&ia)[MZ][RN]) {
#pragma GCC unroll 8
        for (int m = 0; m < MZ; ++m) {
            const __m256i corr = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.corr[b][m]));
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) ia[m][j] = corr;
        }
#pragma GCC unroll 8
        for (int g = 0; g < 8; ++g) add_flipped_dword_products<I32Products>(s, x, b, g, ia);
    }

    // acc[m][j] = Products::add(acc[m][j], dword g of activation row j + 128 per byte, weight vector m's dword g).
    template <class Products, int MZ, int RN>
    [[gnu::always_inline]] static void add_flipped_dword_products(const Scratch& s, const uint8_t* const (&x)[RN], int b, int g,
                                                                  __m256i (&acc)[MZ][RN]) {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        __m256i w[MZ];
#pragma GCC unroll 8
        for (int m = 0; m < MZ; ++m) w[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.w[b][g][m]));
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) {
            const __m256i xu = _mm256_xor_si256(_mm256_set1_epi32(load_i32(x[j] + b * kActBytes + 4 * g)), flip);
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) acc[m][j] = Products::add(acc[m][j], xu, w[m]);
        }
    }

    template <int MZ, int RN>
    static void compute(const Scratch& s, int kc, int i0, const Out& out) {
        const int kb = kc / 32;
        __m256 acc[MZ][RN];
        fill_tile(acc, _mm256_setzero_ps());
        const uint8_t* x[RN];
        tile_activation_rows(s, i0, 2, x);
        const __m256i ones16 = _mm256_set1_epi16(1);
        for (int b = 0; b < kb; ++b) {
            __m256i ia[MZ][RN];
            if constexpr (kVnni) {
                vnni_block_sums<MZ, RN>(s, x, b, ia);
            } else if constexpr (kSignTrick) {
                fill_tile(ia, _mm256_setzero_si256());
#pragma GCC unroll 8
                for (int g = 0; g < 8; ++g) {
                    __m256i w[MZ], aw[MZ];
#pragma GCC unroll 8
                    for (int m = 0; m < MZ; ++m) {
                        w[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.w[b][g][m]));
                        aw[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.aw[b][g][m]));
                    }
#pragma GCC unroll 32
                    for (int j = 0; j < RN; ++j) {
                        const __m256i xv = _mm256_set1_epi32(load_i32(x[j] + b * kActBytes + 4 * g));
#pragma GCC unroll 8
                        for (int m = 0; m < MZ; ++m) {
                            const __m256i p = _mm256_maddubs_epi16(aw[m], _mm256_sign_epi8(xv, w[m]));
                            ia[m][j] = _mm256_add_epi32(ia[m][j], _mm256_madd_epi16(p, ones16));
                        }
                    }
                }
            } else {
#pragma GCC unroll 8
                for (int g0 = 0; g0 < 8; g0 += Dec::kFlush) {
                    __m256i i16[MZ][RN];
                    fill_tile(i16, _mm256_setzero_si256());
#pragma GCC unroll 8
                    for (int g = g0; g < g0 + Dec::kFlush; ++g) add_flipped_dword_products<I16Products>(s, x, b, g, i16);
                    // Widen; the first part also brings in -128 * sum(w).
#pragma GCC unroll 8
                    for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
                        for (int j = 0; j < RN; ++j) {
                            const __m256i wide = _mm256_madd_epi16(i16[m][j], ones16);
                            ia[m][j] = g0 == 0 ? _mm256_add_epi32(wide, _mm256_load_si256(reinterpret_cast<const __m256i*>(s.corr[b][m])))
                                               : _mm256_add_epi32(ia[m][j], wide);
                        }
                    }
                }
            }
            add_block_sums<Avx2Tile>(acc, ia, s.dw[b][0], &s.dx[i0][b], kBlocks);
        }
        store_tile<Avx2Tile>(out, acc);
    }
};

// ================================================================== K-quants, IQ4_XS

// One super-block per k chunk, unpacked by the decoders of super_block_unpack.h. Unsigned
// values go into VPMADDUBSW as they are, their offset through Q8_K's bsums as each group's
// starting sum; int16 pair sums (<= 2 * kMaxValue * 127) are added for kFlush dwords before
// widening. IQ4_XS's levels + 128 would saturate the int16 pair sums, so they are packed as
// signed levels and multiplied with the sign trick (Q8_K's bytes lie in [-127, 127]).
template <class Dec, TileShape Shape>
struct KQuantKind {
    static constexpr int kMZ = Shape.weight_vectors;
    static constexpr int kChunk = 256;
    static constexpr int kTileN = Shape.activation_rows;
    static constexpr int kMaxN = tuning::kTileActivationRows;  // activation rows whose block data are prepared at once
    static constexpr int kPanelsPerBlock = tuning::kPanelsPerBlock;
    static constexpr int kGroups = 256 / Dec::kGroup;
    static constexpr int kGroupDwords = Dec::kGroup / 4;
    static constexpr bool kSignTrick = Dec::kOffset == 128 && !kVnni;
    static constexpr int kOffset = kSignTrick ? 0 : Dec::kOffset;
    static constexpr int kPairMax = 2 * 127 * (kSignTrick ? 127 : Dec::kMaxValue);
    static constexpr int kFlush = 32767 / kPairMax >= 8 ? 8 : 32767 / kPairMax >= 4 ? 4 : 32767 / kPairMax >= 2 ? 2 : 1;
    static constexpr int kFlushDwords = kFlush < kGroupDwords ? kFlush : kGroupDwords;
    static_assert(kGroupDwords % kFlushDwords == 0);
    static constexpr int kActBytes = block_layouts::kQ8_K;
    static int act_bytes(int kc) { return kc / 256 * kActBytes; }
    static int64_t weight_offset(int64_t k0) { return k0 / 256 * Dec::kBytes; }
    static int weight_bytes(int kc) { return kc / 256 * Dec::kBytes; }
    struct Scratch {
        alignas(32) uint8_t w[64][kMZ][32];                    // [dword][8-row vector][lanes]
        alignas(32) uint8_t aw[kSignTrick ? 64 : 1][kMZ][32];  // |values| (sign trick)
        alignas(32) float scale[kGroups][kMZ][8];
        alignas(32) float min[Dec::kHasMin ? kGroups : 1][kMZ][8];
        alignas(32) float dx[kMaxN];
        alignas(32) int32_t binit[kOffset != 0 ? kMaxN : 1][kGroups];  // -offset * group sum of x
        alignas(32) float bsum[Dec::kHasMin ? kMaxN : 1][kGroups];     // -group sum of x (mins)
        const uint8_t* x0;  // the first prepared activation row, at the chunk's super-block
        uint64_t stride;
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int, Scratch& s) {
        const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
        for (int m = 0; m * 8 < nr; ++m) {
            const int rows = imin(8, nr - 8 * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + 8 * m) * a.weight_row_bytes + weight_offset(k0);
            alignas(32) uint8_t values[8][256];
            alignas(32) float scale[8][kGroups];
            alignas(32) float min[8][kGroups];
            unpack_super_blocks<Dec>(base, a.weight_row_bytes, rows, values, scale, min);
            for (int sub = 0; sub < 8; ++sub) {
                __m256 v[8];
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) v[t] = _mm256_load_ps(reinterpret_cast<const float*>(values[t] + 32 * sub));
                transpose8x8(v);
#pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) {
                    __m256i q = _mm256_castps_si256(v[c]);
                    if constexpr (kSignTrick) {
                        q = _mm256_xor_si256(q, flip);  // u - 128 as a signed byte
                        store256(s.aw[8 * sub + c][m], _mm256_abs_epi8(q));
                    }
                    store256(s.w[8 * sub + c][m], q);
                }
            }
            pack_group_scales<Dec::kHasMin>(scale, min, m, s.scale, s.min);
        }
    }

    // Per activation row: its super-block scale, and from Q8_K's bsums (sums of 16 values)
    // the group sums as -offset * sum (integer) and -sum (float, for the mins).
    static void prepare(const TileGemmArgs& a, int64_t n0, int nn, int64_t k0, int, Scratch& s) {
        start_activation_chunk(a, n0, k0 / 256 * kActBytes, s);
        for (int j = 0; j < nn; ++j) {
            const uint8_t* blk = s.x0 + static_cast<uint64_t>(j) * s.stride;
            s.dx[j] = load_f32(blk);
            const __m256i bsums = load256(blk + 260);
            for (int half = 0; half < (Dec::kGroup == 16 ? 2 : 1); ++half) {
                const __m256i sums = Dec::kGroup == 16
                                         ? _mm256_cvtepi16_epi32(half == 0 ? _mm256_castsi256_si128(bsums)
                                                                           : _mm256_extracti128_si256(bsums, 1))
                                         : _mm256_madd_epi16(bsums, _mm256_set1_epi16(1));
                if constexpr (kOffset != 0) {
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(&s.binit[j][8 * half]),
                                        _mm256_mullo_epi32(sums, _mm256_set1_epi32(-kOffset)));
                }
                if constexpr (Dec::kHasMin) {
                    _mm256_storeu_ps(&s.bsum[j][8 * half], _mm256_cvtepi32_ps(_mm256_sub_epi32(_mm256_setzero_si256(), sums)));
                }
            }
        }
    }

    // One group's i32 sums through i16 pair sums, widened every kFlushDwords dwords.
    template <int MZ, int RN>
    [[gnu::always_inline]] static void i16_group_sums(const Scratch& s, const uint8_t* const (&x)[RN], int g,
                                                      __m256i (&ia)[MZ][RN]) {
        const __m256i ones16 = _mm256_set1_epi16(1);
#pragma GCC unroll 8
        for (int q0 = 0; q0 < kGroupDwords; q0 += kFlushDwords) {
            __m256i i16[MZ][RN];
            fill_tile(i16, _mm256_setzero_si256());
#pragma GCC unroll 8
            for (int q = q0; q < q0 + kFlushDwords; ++q) {
                const int dw = g * kGroupDwords + q;
                __m256i w[MZ], aw[MZ];
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) {
                    w[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.w[dw][m]));
                    if constexpr (kSignTrick) aw[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.aw[dw][m]));
                }
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) {
                    const __m256i xv = _mm256_set1_epi32(load_i32(x[j] + 4 * dw));
#pragma GCC unroll 8
                    for (int m = 0; m < MZ; ++m) {
                        const __m256i p = kSignTrick ? _mm256_maddubs_epi16(aw[m], _mm256_sign_epi8(xv, w[m]))
                                                     : _mm256_maddubs_epi16(w[m], xv);
                        i16[m][j] = _mm256_add_epi16(i16[m][j], p);
                    }
                }
            }
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
                for (int j = 0; j < RN; ++j) ia[m][j] = _mm256_add_epi32(ia[m][j], _mm256_madd_epi16(i16[m][j], ones16));
            }
        }
    }

    // One group's i32 sums with VPDPBUSD: unsigned values x signed activation bytes.
    template <int MZ, int RN>
    [[gnu::always_inline]] static void vnni_group_sums(const Scratch& s, const uint8_t* const (&x)[RN], int g,
                                                       __m256i (&ia)[MZ][RN]) {
#pragma GCC unroll 8
        for (int q = 0; q < kGroupDwords; ++q) {
            const int dw = g * kGroupDwords + q;
            __m256i w[MZ];
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) w[m] = _mm256_load_si256(reinterpret_cast<const __m256i*>(s.w[dw][m]));
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) {
                const __m256i xv = _mm256_set1_epi32(load_i32(x[j] + 4 * dw));
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) ia[m][j] = add_byte_products(ia[m][j], w[m], xv);
            }
        }
    }

    template <int MZ, int RN>
    static void compute(const Scratch& s, int, int i0, const Out& out) {
        __m256 acc[MZ][RN];  // the super-block's sums before the activation scale
        fill_tile(acc, _mm256_setzero_ps());
        const uint8_t* x[RN];
        tile_activation_rows(s, i0, 4, x);
        for (int g = 0; g < kGroups; ++g) {
            __m256i ia[MZ][RN];
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) {
                const __m256i init = kOffset != 0 ? _mm256_set1_epi32(s.binit[i0 + j][g]) : _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) ia[m][j] = init;
            }
            if constexpr (kVnni) {
                vnni_group_sums<MZ, RN>(s, x, g, ia);
            } else {
                i16_group_sums<MZ, RN>(s, x, g, ia);
            }
            add_group_sums<Avx2Tile>(acc, ia, s.scale[g][0]);
            if constexpr (Dec::kHasMin) add_min_terms<Avx2Tile>(acc, s.min[g][0], &s.bsum[i0][g], kGroups);
        }
#pragma GCC unroll 8
        for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) acc[m][j] = _mm256_mul_ps(acc[m][j], _mm256_set1_ps(s.dx[i0 + j]));
        }
        store_tile<Avx2Tile>(out, acc);
    }
};

TileGemmFn ymm_tile_gemm_kernel(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F16: return panels_kernel<Avx2Tile, F16TileKind>;
        case GgmlType::Q4_0: return blocked_kernel<Avx2Tile, LegacyKind<DecQ4_0, tuning::kQ4_0Tile>>;
        case GgmlType::Q5_0: return blocked_kernel<Avx2Tile, LegacyKind<DecQ5_0, tuning::kQ5_0Tile>>;
        case GgmlType::Q8_0: return blocked_kernel<Avx2Tile, LegacyKind<DecQ8_0, tuning::kQ8_0Tile>>;
        case GgmlType::IQ4_NL: return blocked_kernel<Avx2Tile, LegacyKind<DecIQ4_NL, tuning::kIQ4_NLTile>>;
        case GgmlType::Q2_K: return blocked_kernel<Avx2Tile, KQuantKind<DecQ2_K, tuning::kQ2_KTile>>;
        case GgmlType::Q3_K: return blocked_kernel<Avx2Tile, KQuantKind<DecQ3_K, tuning::kQ3_KTile>>;
        case GgmlType::Q4_K: return blocked_kernel<Avx2Tile, KQuantKind<DecQ4_K, tuning::kQ4_KTile>>;
        case GgmlType::Q5_K: return blocked_kernel<Avx2Tile, KQuantKind<DecQ5_K, tuning::kQ5_KTile>>;
        case GgmlType::Q6_K: return blocked_kernel<Avx2Tile, KQuantKind<DecQ6_K, tuning::kQ6_KTile>>;
        case GgmlType::IQ4_XS: return blocked_kernel<Avx2Tile, KQuantKind<DecIQ4_XS, tuning::kIQ4_XSTile>>;
        default: return nullptr;
    }
}

}  // namespace
}  // namespace inferscope::simd
