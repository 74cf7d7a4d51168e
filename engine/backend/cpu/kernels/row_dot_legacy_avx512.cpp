// AVX-512 row dot products of the 32-element block formats (row_dot.h): Q8_0, Q5_0 and Q5_1
// two blocks per register, Q4_0, Q4_1 and IQ4_NL four; part of the family described in
// row_dot_avx512.cpp. Compiled with AVX-512 flags (see engine/CMakeLists.txt): everything but
// the entry point stays in an anonymous namespace.
#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/kernels/row_dot_avx512.h"

namespace inferscope::simd {
namespace {

// `Per` 16-bit words from each of `Blocks` consecutive blocks, as words 0, 1, ... of a
// register: p points `Lead` bytes into the first block, and block k's words start at
// p + k*Stride (the f16 fields: Per 1, d; Per 2, [d, m]; Q4_0's packed quants: Per 8 from byte
// 2). Two or three loads inside the blocks' bytes and one or two word permutes: fewer
// instructions than a scalar load per field or a merge per block by masked broadcasts.
template <int64_t Stride, int Blocks, int Per, int64_t Lead = 0>
struct BlockWords {
    static constexpr int64_t kSpan = Stride * Blocks - Lead;  // bytes from p; >= 64 for every layout here
    static constexpr int64_t kSecond = kSpan >= 128 ? 64 : kSpan - 64;  // second register
    static constexpr int64_t kThird = kSpan - 64;                        // third (if needed)
    struct Index {
        alignas(64) uint16_t two[32];    // into [p, p + 64) ++ [p + kSecond, + 64)
        alignas(64) uint16_t third[32];  // into [p + kThird, + 64)
        uint32_t third_mask;
    };
    static constexpr Index make() {
        Index idx{};
        for (int k = 0; k < Blocks; ++k) {
            for (int j = 0; j < Per; ++j) {
                const int word = k * Per + j;
                const int64_t o = k * Stride + 2 * j;
                if (o + 2 <= 64) {
                    idx.two[word] = static_cast<uint16_t>(o / 2);
                } else if (o >= kSecond && o + 2 <= kSecond + 64) {
                    idx.two[word] = static_cast<uint16_t>(32 + (o - kSecond) / 2);
                } else {
                    idx.third[word] = static_cast<uint16_t>((o - kThird) / 2);
                    idx.third_mask |= 1u << word;
                }
            }
        }
        return idx;
    }
    static constexpr Index kIndex = make();
    static_assert(kSpan >= 64 && Stride % 2 == 0 && Blocks * Per <= 32);

    static __m512i words(const uint8_t* p) {
        __m512i v = _mm512_permutex2var_epi16(load512(p), _mm512_load_si512(kIndex.two), load512(p + kSecond));
        if constexpr (kIndex.third_mask != 0) {
            v = _mm512_mask_permutexvar_epi16(v, kIndex.third_mask, _mm512_load_si512(kIndex.third), load512(p + kThird));
        }
        return v;
    }
};

// A float register as the same or a wider type (the lanes past it undefined), and its first
// 4 or 8 lanes.
inline void widen(__m128 v, __m128& out) { out = v; }
inline void widen(__m128 v, __m256& out) { out = _mm256_castps128_ps256(v); }
inline void widen(__m128 v, __m512& out) { out = _mm512_castps128_ps512(v); }
inline void widen(__m256 v, __m256& out) { out = v; }
inline void widen(__m256 v, __m512& out) { out = _mm512_castps256_ps512(v); }
inline void widen(__m512 v, __m512& out) { out = v; }
inline __m128 lanes4(__m256 v) { return _mm256_castps256_ps128(v); }
inline __m128 lanes4(__m512 v) { return _mm512_castps512_ps128(v); }
inline __m256 lanes8(__m256 v) { return v; }
inline __m256 lanes8(__m512 v) { return _mm512_castps512_ps256(v); }

// The scales of `Blocks` blocks (Stride bytes apart) as floats in a V: block k's d in lane k,
// or for kMin its [d, m] pair in lanes 2k, 2k + 1.
template <int64_t Stride, int Blocks, bool kMin, class V>
inline V block_scales(const uint8_t* p) {
    constexpr int kHalves = kMin ? 2 * Blocks : Blocks;
    const __m512i words = BlockWords<Stride, Blocks, kMin ? 2 : 1>::words(p);
    V out;
    if constexpr (kHalves == 4) {
        widen(_mm_cvtph_ps(_mm512_castsi512_si128(words)), out);
    } else if constexpr (kHalves == 8) {
        widen(_mm256_cvtph_ps(_mm512_castsi512_si128(words)), out);
    } else {
        widen(_mm512_cvtph_ps(_mm512_castsi512_si256(words)), out);
    }
    return out;
}

// ws * dx in the first kLanes lanes (those that hold scales).
template <int kLanes, class V>
inline V scale_products(V ws, V dx) {
    V out;
    if constexpr (kLanes == 4) {
        widen(_mm_mul_ps(lanes4(ws), lanes4(dx)), out);
    } else if constexpr (kLanes == 8) {
        widen(_mm256_mul_ps(lanes8(ws), lanes8(dx)), out);
    } else {
        out = _mm512_mul_ps(ws, dx);
    }
    return out;
}

// ---- steps that PairRows and QuadRows share (their registers hold two or four blocks)

inline __m256 add_ps(__m256 a, __m256 b) { return _mm256_add_ps(a, b); }
inline __m512 add_ps(__m512 a, __m512 b) { return _mm512_add_ps(a, b); }

// The permutations that give each lane of a register of integer sums (kBlockLanes lanes per
// block) its block's scale product from a register that holds block k's in lane k, or, for
// [d, m] pairs (kMin), in lane 2k: spread(0) for the step's first register, spread(1) its second.
template <int kBlockLanes, bool kMin>
struct ScaleSpread {
    struct Table {
        alignas(64) int32_t lanes[2][16];
    };
    static constexpr Table make() {
        Table t{};
        for (int half = 0; half < 2; ++half) {
            for (int lane = 0; lane < 16; ++lane) {
                const int block = half * (16 / kBlockLanes) + lane / kBlockLanes;
                t.lanes[half][lane] = kMin ? 2 * block : block;
            }
        }
        return t;
    }
    static constexpr Table kTable = make();
    static __m512i spread(int half) { return _mm512_load_si512(kTable.lanes[half]); }
};

// One step over two registers of blocks: the integer sums s0 and s1 times their blocks' scale
// products p (spread0 and spread1 move them to the sums' lanes); for kMin, p also into accm.
template <bool kMin, class Scales>
[[gnu::always_inline]] inline void add_step(__m512& acc0, __m512& acc1, Scales& accm, Scales p, __m512i spread0,
                                            __m512i spread1, __m512i s0, __m512i s1) {
    if constexpr (kMin) accm = add_ps(accm, p);
    __m512 p512;
    widen(p, p512);
    acc0 = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread0, p512), _mm512_cvtepi32_ps(s0), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread1, p512), _mm512_cvtepi32_ps(s1), acc1);
}

// A block after the steps, its integer sums s in kLanes lanes: d_w * d_x times them into acc,
// and for kMin m_w * s_x into tail_min (added after the reduction).
template <bool kMin, __mmask16 kLanes>
[[gnu::always_inline]] inline void add_tail_block(__m512& acc, float& tail_min, const uint8_t* wb, float dx, float sx,
                                                  __m512i s) {
    const __m512 d = _mm512_maskz_mov_ps(kLanes, _mm512_set1_ps(f16_at(wb) * dx));
    acc = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(s), acc);
    if constexpr (kMin) tail_min += f16_at(wb + 2) * sx;
}

// The [d, s] of a block after the steps, as a batch layout holds it (s = 0 without kMin).
template <bool kMin>
inline __m512i tail_scales(const uint8_t* xb) {
    const float m = kMin ? f16_at(xb + 2) : 0.0f;
    return _mm512_castps_si512(_mm512_setr_ps(f16_at(xb), m, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
}

// The odd lanes of [d_w*d_x, m_w*s_x] pairs (the min terms), the others zero.
inline __m512 odd_lanes(__m256 pairs) {
    const __m256 odd = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
    return _mm512_zextps256_ps512(_mm256_and_ps(pairs, odd));
}
inline __m512 odd_lanes(__m512 pairs) {
    const __m512 odd = _mm512_castsi512_ps(_mm512_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1));
    return _mm512_and_ps(pairs, odd);
}

// acc0 + acc1, with the odd lanes of accm (the m_w * s_x terms) for kMin.
template <bool kMin, class Scales>
inline __m512 total_of(__m512 acc0, __m512 acc1, Scales accm) {
    const __m512 total = _mm512_add_ps(acc0, acc1);
    if constexpr (kMin) return _mm512_add_ps(total, odd_lanes(accm));
    return total;
}

// The end of rows(): each row's accumulators reduced into out, plus the tail's min terms.
template <class Rows, int R, class Scales>
[[gnu::always_inline]] inline void finish_rows(float* out, int64_t out_stride, const __m512 (&acc0)[R], const __m512 (&acc1)[R],
                                               const Scales (&accm)[R], const float (&tail_min)[R]) {
    __m512 total[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) total[r] = total_of<Rows::kTailMin>(acc0[r], acc1[r], accm[r]);
    store_sums<R>(out, out_stride, total);
    if constexpr (Rows::kTailMin) {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) out[r * out_stride] += tail_min[r];
    }
}

// Q8_0, Q5_0 and Q5_1 keep two blocks per register (block a in the low 256 bits, b in the
// high ones). Each Pair type splits its integer sums in an activation part, shared by all
// rows of a group (prep: the activation quants and the start value of the sums, which holds
// the offset term -offset*sum(x)), and a weight part (quants: the two blocks' quants as the
// unsigned bytes that meet the activation's in vpdpbusd).

struct Q8_0Pair {  // sum((w + 128) * x) - 128 * sum(x), w + 128 = w ^ 0x80 as an unsigned byte
    static constexpr int64_t kW = kQ8_0, kX = kQ8_0;
    static constexpr bool kMin = false;
    static __m512i prep(const uint8_t* xa, const uint8_t* xb, __m512i& qx) {
        qx = join32(xa + 2, xb + 2);
        const __m512i zero = _mm512_setzero_si512();
        return _mm512_sub_epi32(zero, dpbusd(zero, _mm512_set1_epi8(static_cast<char>(0x80)), qx));
    }
    static __m512i quants(const uint8_t* wa, const uint8_t* wb) {
        return _mm512_xor_si512(join32(wa + 2, wb + 2), _mm512_set1_epi8(static_cast<char>(0x80)));
    }
};

// 16 bytes of packed nibbles of blocks a and b -> [a low, a high, b low, b high] (32 quants
// per block in element order).
inline __m512i nibbles_pair(const uint8_t* qa, const uint8_t* qb) {
    __m512i t = _mm512_broadcast_i32x4(load128(qa));           // a a a a
    t = _mm512_mask_broadcast_i32x4(t, 0xFF00, load128(qb));   // a a b b
    return _mm512_and_si512(_mm512_mask_srli_epi16(t, 0xFF00FF00u, t, 4), low_nibbles());
}

// Each block's 32-bit qh word is directly the byte mask of its fifth bits.
inline __mmask64 qh_pair(const uint8_t* qha, const uint8_t* qhb) {
    return _cvtu64_mask64(static_cast<uint64_t>(load_u32(qha)) | static_cast<uint64_t>(load_u32(qhb)) << 32);
}

struct Q5_0Pair {  // q = nibble + 16*bit in 0..31: sum(q * x) - 16 * sum(x)
    static constexpr int64_t kW = kQ5_0, kX = kQ8_0;
    static constexpr bool kMin = false;
    static __m512i prep(const uint8_t* xa, const uint8_t* xb, __m512i& qx) {
        qx = join32(xa + 2, xb + 2);
        const __m512i zero = _mm512_setzero_si512();
        return _mm512_sub_epi32(zero, dpbusd(zero, _mm512_set1_epi8(16), qx));
    }
    static __m512i quants(const uint8_t* wa, const uint8_t* wb) {
        const __m512i q = nibbles_pair(wa + 6, wb + 6);
        return _mm512_mask_add_epi8(q, qh_pair(wa + 2, wb + 2), q, _mm512_set1_epi8(16));
    }
};

struct Q5_1Pair {  // q = nibble + 16*bit in 0..31 (value d*q + m)
    static constexpr int64_t kW = kQ5_1, kX = kQ8_1;
    static constexpr bool kMin = true;
    static __m512i prep(const uint8_t* xa, const uint8_t* xb, __m512i& qx) {
        qx = join32(xa + 4, xb + 4);
        return _mm512_setzero_si512();
    }
    static __m512i quants(const uint8_t* wa, const uint8_t* wb) {
        const __m512i q = nibbles_pair(wa + 8, wb + 8);
        return _mm512_mask_add_epi8(q, qh_pair(wa + 4, wb + 4), q, _mm512_set1_epi8(16));
    }
};

// sum over blocks of (d_w*d_x) * sumi [+ m_w * s_x for Q5_1], four blocks per step (two
// registers of two), the products' scales spread over the 256-bit halves with one permute.
template <class Pair>
struct PairRows {
    static constexpr int64_t kW = Pair::kW, kX = Pair::kX;
    static constexpr int64_t kAheadBytes = kW == kQ8_0 ? tuning::kQ8_0PrefetchBytes : tuning::kRowDotPrefetchBytes;
    static constexpr int kLocality = kIntoL1;  // L1 even on Intel cores: L2 slows Q8_0 decode
    // sum(q * x) + init over blocks a and b.
    static __m512i sum(const uint8_t* wa, const uint8_t* wb, __m512i init, __m512i qx) {
        return dpbusd(init, Pair::quants(wa, wb), qx);
    }
    // The scales of four blocks: the activation's from xb, a weight row's from wb, and their
    // products (block k's in lane k; [d, m] pairs in lanes 2k, 2k+1 for kMin).
    static __m256 x_scales4(const uint8_t* xb) { return block_scales<kX, 4, Pair::kMin, __m256>(xb); }
    static __m256 w_scales4(const uint8_t* wb) { return block_scales<kW, 4, Pair::kMin, __m256>(wb); }
    static __m256 products4(__m256 ws, __m256 dx) { return scale_products<Pair::kMin ? 8 : 4>(ws, dx); }
    // Block k's scale in the 256-bit half k % 2 (blocks 0, 1 by spread(0), 2, 3 by spread(1)).
    static __m512i spread(int half) { return ScaleSpread<8, Pair::kMin>::spread(half); }
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        const int64_t nb = n / 32;
        __m512 acc0[R], acc1[R];
        __m256 accm[R];  // kMin: [d_w*d_x, m_w*s_x] pairs; the odd lanes count
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            acc0[r] = acc1[r] = _mm512_setzero_ps();
            accm[r] = _mm256_setzero_ps();
        }
        const __m512i spread01 = spread(0), spread23 = spread(1);
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4) {
            const uint8_t* xb = x + b * kX;
            __m512i qx01, qx23;
            const __m512i init01 = Pair::prep(xb, xb + kX, qx01);
            const __m512i init23 = Pair::prep(xb + 2 * kX, xb + 3 * kX, qx23);
            const __m256 dx = x_scales4(xb);
            const int64_t pf = ahead.at(b * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                prefetch_span<4 * kW, kLocality>(wb + pf);
                const __m512i s01 = sum(wb, wb + kW, init01, qx01);
                const __m512i s23 = sum(wb + 2 * kW, wb + 3 * kW, init23, qx23);
                add_step<Pair::kMin>(acc0[r], acc1[r], accm[r], products4(w_scales4(wb), dx), spread01, spread23, s01, s23);
            }
        }
        float tail_min[R] = {};
        for (; b < nb; ++b) {
            // One block: as block a, with block b the same bytes and a zero scale.
            const uint8_t* xb = x + b * kX;
            __m512i qx;
            const __m512i init = Pair::prep(xb, xb, qx);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                add_tail_block<Pair::kMin, 0x00FF>(acc0[r], tail_min[r], wb, f16_at(xb), f16_at(xb + 2), sum(wb, wb, init, qx));
            }
        }
        finish_rows<PairRows>(out, out_stride, acc0, acc1, accm, tail_min);
    }

    // ---- batches (dot_rows_batch), as QuadRows': a layout holds 5 registers per four-block
    // step (qx01, init01, qx23, init23, scales) and 3 per block after them (qx, init, [d, m]).
    static constexpr bool kTailMin = Pair::kMin;
    static int64_t layout_regs(int64_t n) {
        const int64_t nb = n / 32;
        return nb / 4 * 5 + nb % 4 * 3;
    }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        const int64_t nb = n / 32;
        int64_t b = 0;
        for (; b + 4 <= nb; b += 4, v += 5) {
            const uint8_t* xb = x + b * kX;
            v[1] = Pair::prep(xb, xb + kX, v[0]);
            v[3] = Pair::prep(xb + 2 * kX, xb + 3 * kX, v[2]);
            v[4] = _mm512_castps_si512(_mm512_castps256_ps512(x_scales4(xb)));
        }
        for (; b < nb; ++b, v += 3) {
            const uint8_t* xb = x + b * kX;
            v[1] = Pair::prep(xb, xb, v[0]);
            v[2] = tail_scales<Pair::kMin>(xb);
        }
    }
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int /*group_rows*/,
                          __m512 (&total)[B], float (&tail_min)[B]) {
        const int64_t nb = n / 32;
        __m512 acc0[B], acc1[B];
        __m256 accm[B];
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) {
            acc0[i] = acc1[i] = _mm512_setzero_ps();
            accm[i] = _mm256_setzero_ps();
            tail_min[i] = 0.0f;
        }
        const __m512i spread01 = spread(0), spread23 = spread(1);
        int64_t b = 0, at = 0;  // at: the step's first register in each layout
        for (; b + 4 <= nb; b += 4, at += 5) {
            const uint8_t* wb = w + b * kW;
            prefetch_span<4 * kW, kLocality>(wb + pf);
            const __m512i q01 = Pair::quants(wb, wb + kW);
            const __m512i q23 = Pair::quants(wb + 2 * kW, wb + 3 * kW);
            const __m256 ws = w_scales4(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                const __m512i s01 = dpbusd(v[1], q01, v[0]);
                const __m512i s23 = dpbusd(v[3], q23, v[2]);
                const __m256 p = products4(ws, _mm512_castps512_ps256(_mm512_castsi512_ps(v[4])));
                add_step<Pair::kMin>(acc0[i], acc1[i], accm[i], p, spread01, spread23, s01, s23);
            }
        }
        for (; b < nb; ++b, at += 3) {
            const uint8_t* wb = w + b * kW;
            const __m512i q = Pair::quants(wb, wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                alignas(64) float dm[16];
                _mm512_store_si512(dm, v[2]);
                add_tail_block<Pair::kMin, 0x00FF>(acc0[i], tail_min[i], wb, dm[0], dm[1], dpbusd(v[1], q, v[0]));
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of<kTailMin>(acc0[i], acc1[i], accm[i]);
    }
};

// The 4-bit formats, four blocks per register: 128-bit lane L holds 16 quants of block L. The
// weights' 16 bytes of packed nibbles fill one register; their low nibbles (elements 0..15)
// meet a register of the activations' first 16 quants, the high nibbles (elements 16..31) one
// of their last 16, and vpdpbusd leaves four int32 partial sums of block L in lane L. Blocks
// are read at p, p + stride, p + 2*stride, p + 3*stride (stride 0: the same block four times,
// for the tail). As for the pairs, prep is the activation side, sum the weight side.

// 16 bytes from each of p, p + stride, p + 2*stride, p + 3*stride (masked broadcasts from
// memory: loads without shuffles): the activation's runs and the tails' (stride 0).
inline __m512i four16(const uint8_t* p, int64_t stride) {
    __m512i t = _mm512_castsi128_si512(load128(p));
    t = _mm512_mask_broadcast_i32x4(t, 0x00F0, load128(p + stride));
    t = _mm512_mask_broadcast_i32x4(t, 0x0F00, load128(p + 2 * stride));
    return _mm512_mask_broadcast_i32x4(t, 0xF000, load128(p + 3 * stride));
}

// Four blocks' packed quants at qs + k*Stride (qs `Lead` bytes into its block) as their low
// nibbles (elements 0..15 of block k in lane k) and high nibbles (16..31). Each weight row's
// runs come from BlockWords (the activation's runs, read once per step for all the rows, come
// from four16, which is faster for them).
template <int64_t Stride, int64_t Lead>
inline void nibbles(const uint8_t* qs, __m512i& lo, __m512i& hi) {
    __m512i q;
    if constexpr (Stride == 0) {
        q = four16(qs, 0);
    } else {
        q = BlockWords<Stride, 4, 8, Lead>::words(qs);
    }
    lo = _mm512_and_si512(q, low_nibbles());
    hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low_nibbles());
}

// sum(lo * xlo + hi * xhi) + init, per lane.
inline __m512i nibble_dots(__m512i init, __m512i lo, __m512i hi, __m512i xlo, __m512i xhi) {
    return dpbusd(dpbusd(init, lo, xlo), hi, xhi);
}

// The Quad types: kLead, where a block's quants start; prep, the activation side of four
// blocks (their runs and the start value of the sums).

// prep for Q8_0 activations facing unsigned quants that stand for quant - Offset: the runs,
// and -Offset * sum(x) per lane.
template <int Offset>
inline __m512i offset_prep(const uint8_t* x, int64_t sx, __m512i& xlo, __m512i& xhi) {
    xlo = four16(x + 2, sx);
    xhi = four16(x + 18, sx);
    const __m512i zero = _mm512_setzero_si512();
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(Offset));
    return _mm512_sub_epi32(zero, dpbusd(dpbusd(zero, offset, xlo), offset, xhi));
}
struct Q4_0Quad {  // q in 0..15, value q - 8: sum(q * x) - 8 * sum(x)
    static constexpr int64_t kW = kQ4_0, kX = kQ8_0, kLead = 2;
    static constexpr bool kMin = false, kTable = false;
    static __m512i prep(const uint8_t* x, int64_t sx, __m512i& xlo, __m512i& xhi) {
        return offset_prep<8>(x, sx, xlo, xhi);
    }
};

struct Q4_1Quad {  // q in 0..15 (value d*q + m)
    static constexpr int64_t kW = kQ4_1, kX = kQ8_1, kLead = 4;
    static constexpr bool kMin = true, kTable = false;
    static __m512i prep(const uint8_t* x, int64_t sx, __m512i& xlo, __m512i& xhi) {
        xlo = four16(x + 4, sx);
        xhi = four16(x + 20, sx);
        return _mm512_setzero_si512();
    }
};

struct IQ4_NLQuad {  // Q4_0's layout; nibble q means level(q): sum((level + 128) * x) - 128 * sum(x)
    static constexpr int64_t kW = kIQ4_NL, kX = kQ8_0, kLead = 2;
    static constexpr bool kMin = false, kTable = true;
    static __m512i prep(const uint8_t* x, int64_t sx, __m512i& xlo, __m512i& xhi) {
        return offset_prep<128>(x, sx, xlo, xhi);
    }
};

// sum over blocks of (d_w*d_x) * sumi [+ m_w * s_x for Q4_1], eight blocks per step (two
// registers of four). Locality: where the weights are prefetched (active_prefetch_level).
template <class Quad, int Locality>
struct QuadRows {
    static constexpr int64_t kW = Quad::kW, kX = Quad::kX;
    static constexpr int64_t kAheadBytes = tuning::kQuadRowsPrefetchBytes;
    static constexpr int kLocality = Locality;
    // The unsigned quants of four blocks (nibbles, or for kTable the looked-up levels + 128).
    template <int64_t Stride>
    static void quants(const uint8_t* qs, __m512i& lo, __m512i& hi) {
        nibbles<Stride, Quad::kLead>(qs, lo, hi);
        if constexpr (Quad::kTable) {
            lo = _mm512_shuffle_epi8(iq4_levels_u8(), lo);
            hi = _mm512_shuffle_epi8(iq4_levels_u8(), hi);
        }
    }
    // sum(q * x) + init over four blocks from w (Stride 0: one block four times).
    template <int64_t Stride>
    static __m512i sum(const uint8_t* w, __m512i init, __m512i xlo, __m512i xhi) {
        __m512i lo, hi;
        quants<Stride>(w + Quad::kLead, lo, hi);
        return nibble_dots(init, lo, hi, xlo, xhi);
    }
    // The scales: an activation's of eight (four) blocks from xb as x_scales8 (4), a weight
    // row's from wb as w_scales8 (4), their products (block k's in lane k; [d, m] pairs in
    // lanes 2k, 2k+1 for kMin) as products8 (4).
    static __m512 x_scales8(const uint8_t* xb) {
        // Locals, not nested calls: clang's insert intrinsics are macros, and template
        // arguments' commas would split their arguments.
        if constexpr (Quad::kMin) {
            const __m512 first = block_scales<kX, 4, true, __m512>(xb);
            const __m256 second = block_scales<kX, 4, true, __m256>(xb + 4 * kX);
            return _mm512_insertf32x8(first, second, 1);
        } else {
            const __m256 first = block_scales<kX, 4, false, __m256>(xb);
            const __m128 second = block_scales<kX, 4, false, __m128>(xb + 4 * kX);
            return _mm512_castps256_ps512(_mm256_insertf128_ps(first, second, 1));
        }
    }
    static __m512 x_scales4(const uint8_t* xb) { return block_scales<kX, 4, Quad::kMin, __m512>(xb); }
    static __m512 w_scales8(const uint8_t* wb) { return block_scales<kW, 8, Quad::kMin, __m512>(wb); }
    static __m512 w_scales4(const uint8_t* wb) { return block_scales<kW, 4, Quad::kMin, __m512>(wb); }
    static __m512 products8(__m512 ws, __m512 dx) { return scale_products<Quad::kMin ? 16 : 8>(ws, dx); }
    static __m512 products4(__m512 ws, __m512 dx) { return scale_products<Quad::kMin ? 8 : 4>(ws, dx); }
    // Block k's scale in lanes 4k..4k+3 (blocks 0..3 by spread(0), 4..7 by spread(1)).
    static __m512i spread(int half) { return ScaleSpread<4, Quad::kMin>::spread(half); }
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        const int64_t nb = n / 32;
        __m512 acc0[R], acc1[R], accm[R];  // accm (kMin): [d_w*d_x, m_w*s_x] pairs; the odd lanes count
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = accm[r] = _mm512_setzero_ps();
        const __m512i spread0 = spread(0), spread1 = spread(1);
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8) {
            const uint8_t* xb = x + b * kX;
            __m512i xlo0, xhi0, xlo1, xhi1;
            const __m512i init0 = Quad::prep(xb, kX, xlo0, xhi0);
            const __m512i init1 = Quad::prep(xb + 4 * kX, kX, xlo1, xhi1);
            const __m512 dx = x_scales8(xb);
            const int64_t pf = ahead.at(b * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                prefetch_span<8 * kW, kLocality>(wb + pf);
                const __m512i s0 = sum<kW>(wb, init0, xlo0, xhi0);
                const __m512i s1 = sum<kW>(wb + 4 * kW, init1, xlo1, xhi1);
                add_step<Quad::kMin>(acc0[r], acc1[r], accm[r], products8(w_scales8(wb), dx), spread0, spread1, s0, s1);
            }
        }
        if (b + 4 <= nb) {
            const uint8_t* xb = x + b * kX;
            __m512i xlo, xhi;
            const __m512i init = Quad::prep(xb, kX, xlo, xhi);
            const __m512 dx = x_scales4(xb);
            const int64_t pf = ahead.at(b * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                prefetch_span<4 * kW, kLocality>(wb + pf);
                const __m512i s = sum<kW>(wb, init, xlo, xhi);
                const __m512 p = products4(w_scales4(wb), dx);
                if constexpr (Quad::kMin) accm[r] = _mm512_add_ps(accm[r], _mm512_zextps256_ps512(_mm512_castps512_ps256(p)));
                acc0[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread0, p), _mm512_cvtepi32_ps(s), acc0[r]);
            }
            b += 4;
        }
        float tail_min[R] = {};
        for (; b < nb; ++b) {
            // One block, read four times (stride 0); only lanes 0..3 get its scale.
            const uint8_t* xb = x + b * kX;
            __m512i xlo, xhi;
            const __m512i init = Quad::prep(xb, 0, xlo, xhi);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                const __m512i s = sum<0>(wb, init, xlo, xhi);
                add_tail_block<Quad::kMin, 0x000F>(acc1[r], tail_min[r], wb, f16_at(xb), f16_at(xb + 2), s);
            }
        }
        finish_rows<QuadRows>(out, out_stride, acc0, acc1, accm, tail_min);
    }

    // ---- batches (dot_rows_batch): one weight row against up to kMaxBatch activation rows,
    // its quants unpacked and its scales converted once for all of them. Each activation's
    // side of every step is laid out before (lay_out) as rows() computes it, so that each sum
    // is rows()'s to the bit. A layout holds 7 registers per eight-block step (xlo0, xhi0,
    // xlo1, xhi1, init0, init1, scales), 4 for a four-block step (xlo, xhi, init, scales) and
    // 4 per block after them (xlo, xhi, init, [d, m]).
    static constexpr bool kTailMin = Quad::kMin;  // rows() adds tail_min after the reduction
    static int64_t layout_regs(int64_t n) {
        const int64_t nb = n / 32;
        return nb / 8 * 7 + (nb % 8 >= 4 ? 4 : 0) + nb % 4 * 4;
    }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        const int64_t nb = n / 32;
        int64_t b = 0;
        for (; b + 8 <= nb; b += 8, v += 7) {
            const uint8_t* xb = x + b * kX;
            v[4] = Quad::prep(xb, kX, v[0], v[1]);
            v[5] = Quad::prep(xb + 4 * kX, kX, v[2], v[3]);
            v[6] = _mm512_castps_si512(x_scales8(xb));
        }
        if (b + 4 <= nb) {
            const uint8_t* xb = x + b * kX;
            v[2] = Quad::prep(xb, kX, v[0], v[1]);
            v[3] = _mm512_castps_si512(x_scales4(xb));
            v += 4;
            b += 4;
        }
        for (; b < nb; ++b, v += 4) {
            const uint8_t* xb = x + b * kX;
            v[2] = Quad::prep(xb, 0, v[0], v[1]);
            v[3] = tail_scales<Quad::kMin>(xb);
        }
    }
    // Row w against the B layouts at x, x + x_regs, ...: total[i] (to be reduced) and, for
    // kTailMin, tail_min[i] (to be added after the reduction), as rows() has them.
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int /*group_rows*/,
                          __m512 (&total)[B], float (&tail_min)[B]) {
        const int64_t nb = n / 32;
        __m512 acc0[B], acc1[B], accm[B];
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) {
            acc0[i] = acc1[i] = accm[i] = _mm512_setzero_ps();
            tail_min[i] = 0.0f;
        }
        const __m512i spread0 = spread(0), spread1 = spread(1);
        int64_t b = 0, at = 0;  // at: the step's first register in each layout
        for (; b + 8 <= nb; b += 8, at += 7) {
            const uint8_t* wb = w + b * kW;
            prefetch_span<8 * kW, kLocality>(wb + pf);
            __m512i lo0, hi0, lo1, hi1;
            quants<kW>(wb + Quad::kLead, lo0, hi0);
            quants<kW>(wb + 4 * kW + Quad::kLead, lo1, hi1);
            const __m512 ws = w_scales8(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                const __m512i s0 = nibble_dots(v[4], lo0, hi0, v[0], v[1]);
                const __m512i s1 = nibble_dots(v[5], lo1, hi1, v[2], v[3]);
                const __m512 p = products8(ws, _mm512_castsi512_ps(v[6]));
                add_step<Quad::kMin>(acc0[i], acc1[i], accm[i], p, spread0, spread1, s0, s1);
            }
        }
        if (b + 4 <= nb) {
            const uint8_t* wb = w + b * kW;
            prefetch_span<4 * kW, kLocality>(wb + pf);
            __m512i lo, hi;
            quants<kW>(wb + Quad::kLead, lo, hi);
            const __m512 ws = w_scales4(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                const __m512i s = nibble_dots(v[2], lo, hi, v[0], v[1]);
                const __m512 p = products4(ws, _mm512_castsi512_ps(v[3]));
                if constexpr (Quad::kMin) accm[i] = _mm512_add_ps(accm[i], _mm512_zextps256_ps512(_mm512_castps512_ps256(p)));
                acc0[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread0, p), _mm512_cvtepi32_ps(s), acc0[i]);
            }
            b += 4;
            at += 4;
        }
        for (; b < nb; ++b, at += 4) {
            const uint8_t* wb = w + b * kW;
            __m512i lo, hi;
            quants<0>(wb + Quad::kLead, lo, hi);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                alignas(64) float dm[16];
                _mm512_store_si512(dm, v[3]);
                add_tail_block<Quad::kMin, 0x000F>(acc1[i], tail_min[i], wb, dm[0], dm[1], nibble_dots(v[2], lo, hi, v[0], v[1]));
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of<kTailMin>(acc0[i], acc1[i], accm[i]);
    }
};

}  // namespace

RowDotKernels avx512_legacy_row_dots(GgmlType weight_type, PrefetchLevel prefetch) {
    const bool to_l2 = prefetch == PrefetchLevel::L2;
    switch (weight_type) {
        case GgmlType::Q8_0: return rows_kernels<PairRows<Q8_0Pair>>(GgmlType::Q8_0);
        case GgmlType::Q4_0:
            return to_l2 ? rows_kernels<QuadRows<Q4_0Quad, kIntoL2>>(GgmlType::Q8_0)
                         : rows_kernels<QuadRows<Q4_0Quad, kIntoL1>>(GgmlType::Q8_0);
        case GgmlType::Q5_0: return rows_kernels<PairRows<Q5_0Pair>>(GgmlType::Q8_0);
        case GgmlType::Q4_1:
            return to_l2 ? rows_kernels<QuadRows<Q4_1Quad, kIntoL2>>(GgmlType::Q8_1)
                         : rows_kernels<QuadRows<Q4_1Quad, kIntoL1>>(GgmlType::Q8_1);
        case GgmlType::Q5_1: return rows_kernels<PairRows<Q5_1Pair>>(GgmlType::Q8_1);
        case GgmlType::IQ4_NL:
            return to_l2 ? rows_kernels<QuadRows<IQ4_NLQuad, kIntoL2>>(GgmlType::Q8_0)
                         : rows_kernels<QuadRows<IQ4_NLQuad, kIntoL1>>(GgmlType::Q8_0);
        default: return {};
    }
}

}  // namespace inferscope::simd
