// AVX-512 row dot products of the 256-element super-block formats against Q8_K activations
// (row_dot.h): the K-quants and IQ4_XS; part of the family described in row_dot_avx512.cpp.
// Compiled with AVX-512 flags (see engine/CMakeLists.txt): everything but the entry point
// stays in an anonymous namespace.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/row_dot_avx512.h"

namespace inferscope::simd {
namespace {

// The low and the high 256 bits of a register from two places.
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

// (a & 0x0F) | b, one instruction (vpternlogd truth table 0xEC for (A & C) | B).
inline __m512i nibble_or(__m512i a, __m512i b) { return _mm512_ternarylogic_epi32(a, b, low_nibbles(), 0xEC); }

// Word index vector for vpermw: word i -> first + (i >> shift).
alignas(64) constexpr uint16_t kIota16[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                               16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
inline __m512i word_groups(int first, int shift) {
    const __m512i iota = _mm512_load_si512(kIota16);
    return _mm512_add_epi16(_mm512_srli_epi16(iota, static_cast<unsigned>(shift)), _mm512_set1_epi16(static_cast<short>(first)));
}

// ---------------------------------------------------------------- K-quants (x Q8_K)
// One 256-element superblock per step; a Blocks type computes one row's superblock against the
// activation's (acc += d*dx * sumi, accm += dmin*dx * the mins term).

// acc + sum over 64 elements of scale(element) * q * x: q unsigned bytes, x the activation
// quants, scales the int16 scale of each pair of products (vpermw of the block's scales).
inline __m512i scaled_run(__m512i acc, __m512i q, const uint8_t* qx, __m512i scales) {
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(q, load512(qx)), scales);
}

// Byte select masks: bit `lo` in the low 32 bytes, bit `hi` in the high 32 bytes.
inline __m512i bit_pair(int lo, int hi) {
    return join(_mm256_set1_epi8(static_cast<char>(1 << lo)), _mm256_set1_epi8(static_cast<char>(1 << hi)));
}

// 32 bytes at p in both halves of a register (a broadcast load: no shuffle).
inline __m512i twice32(const uint8_t* p) { return _mm512_broadcast_i64x4(load256(p)); }

// [v, v >> shift] (16-bit lanes) from 32 bytes at p.
template <int Shift>
inline __m512i with_shifted_high(const uint8_t* p) {
    const __m512i v = twice32(p);
    return _mm512_mask_srli_epi16(v, 0xFFFF0000u, v, Shift);
}

// A body's unpack and dot (and offset_dot) are always inlined: the row loops need them
// inline, and GCC's inlining budget, which grows with the size of the file, would leave
// some of them as calls.
//
// Each body splits a superblock's work into unpack (the weight row's side: quants widened to
// bytes, scales to 16-bit words in the order of the products) and dot (that against one
// activation's superblock: acc += d*dx * sumi, accm += dmin*dx * the mins term), so that the
// batch kernels unpack a weight superblock once for several activations and still compute
// each product as rows() does. An activation superblock reaches dot as an X view: prep
// reads it from the Q8_K bytes, view from a layout of kKLayoutRegs registers that lay_out
// wrote once per call.
constexpr int kKLayoutRegs = 5;  // 320 bytes: a Q8_K superblock (292) or its gathered form

// A layout that is a copy of the Q8_K superblock's bytes.
inline void copy_superblock(const uint8_t* x, __m512i* v) {
    std::memset(v, 0, sizeof(__m512i) * kKLayoutRegs);
    std::memcpy(v, x, kQ8_K);
}

// Q4_K/Q5_K: each 64 bytes of packed quants hold sub-blocks 4h and 4h + 2 in their low
// nibbles (bytes 0..31, 32..63) and 4h + 1, 4h + 3 in their high nibbles; the activation
// quants are gathered to match once per superblock for all rows (prep) or once per call
// (lay_out: the four gathered registers, then the bsums and d).
template <bool Q5>
struct Q4_KOrQ5_KBlocks {
    static constexpr int64_t kW = Q5 ? kQ5_K : kQ4_K;
    static constexpr bool kMin = true;
    struct X {
        __m512i q[2][2];  // [h][low/high nibbles]
        const uint8_t* bsums;
        float d;
    };
    static X prep(const uint8_t* x) {
        X xp;
        for (int h = 0; h < 2; ++h) {
            const uint8_t* qx = x + kQ8_KQs + 128 * h;
            xp.q[h][0] = join32(qx, qx + 64);
            xp.q[h][1] = join32(qx + 32, qx + 96);
        }
        xp.bsums = x + kQ8_KBsums;
        xp.d = load_f32(x);
        return xp;
    }
    static void lay_out(const uint8_t* x, __m512i* v) {
        const X xp = prep(x);
        v[0] = xp.q[0][0];
        v[1] = xp.q[0][1];
        v[2] = xp.q[1][0];
        v[3] = xp.q[1][1];
        v[4] = _mm512_setzero_si512();
        auto* tail = reinterpret_cast<uint8_t*>(v + 4);
        std::memcpy(tail, xp.bsums, 32);
        store_f32(tail + 32, xp.d);
    }
    static X view(const __m512i* v) {
        const auto* tail = reinterpret_cast<const uint8_t*>(v + 4);
        return {{{v[0], v[1]}, {v[2], v[3]}}, tail, load_f32(tail + 32)};
    }
    // Word index vector: words 0..15 -> a, 16..31 -> b.
    static __m512i word_pair(int a, int b) {
        return _mm512_mask_mov_epi16(_mm512_set1_epi16(static_cast<short>(a)), 0xFFFF0000u, _mm512_set1_epi16(static_cast<short>(b)));
    }
    struct W {
        __m512i q[2][2];       // [h][sub-blocks 4h, 4h + 2 / 4h + 1, 4h + 3] as bytes
        __m512i scales[2][2];  // the words that multiply them
        __m256i mins;
        __m128 dm;             // [d, dmin]
    };
    [[gnu::always_inline]] static W unpack(const uint8_t* w) {
        constexpr int64_t kQs = Q5 ? 48 : 16;
        W u;
        const __m128i sm = k4_scales_mins(w + 4);
        u.mins = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
        u.dm = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(load_u32(w))));
        const __m512i scales = _mm512_castsi128_si512(_mm_cvtepu8_epi16(sm));
        __m512i qh2 = _mm512_setzero_si512();
        if constexpr (Q5) qh2 = twice32(w + 16);
        for (int h = 0; h < 2; ++h) {
            const __m512i q = load512(w + kQs + 64 * h);
            __m512i lo = _mm512_and_si512(q, low_nibbles());
            __m512i hi = _mm512_and_si512(_mm512_srli_epi16(q, 4), low_nibbles());
            if constexpr (Q5) {
                const __m512i sixteen = _mm512_set1_epi8(16);
                lo = _mm512_mask_add_epi8(lo, _mm512_test_epi8_mask(qh2, bit_pair(4 * h, 4 * h + 2)), lo, sixteen);
                hi = _mm512_mask_add_epi8(hi, _mm512_test_epi8_mask(qh2, bit_pair(4 * h + 1, 4 * h + 3)), hi, sixteen);
            }
            u.q[h][0] = lo;
            u.q[h][1] = hi;
            u.scales[h][0] = _mm512_permutexvar_epi16(word_pair(4 * h, 4 * h + 2), scales);
            u.scales[h][1] = _mm512_permutexvar_epi16(word_pair(4 * h + 1, 4 * h + 3), scales);
        }
        return u;
    }
    [[gnu::always_inline]] static void dot(const W& u, const X& x, __m512& acc, __m256& accm) {
        const __m256i msum = _mm256_madd_epi16(load256(x.bsums), u.mins);
        const __m128 dd = _mm_mul_ps(u.dm, _mm_set1_ps(x.d));  // [d, dmin] * dx
        accm = _mm256_fmadd_ps(_mm256_broadcastss_ps(_mm_movehdup_ps(dd)), _mm256_cvtepi32_ps(msum), accm);
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h) {
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(u.q[h][0], x.q[h][0]), u.scales[h][0]);
            sumi = _mm512_dpwssd_epi32(sumi, _mm512_maddubs_epi16(u.q[h][1], x.q[h][1]), u.scales[h][1]);
        }
        acc = _mm512_fmadd_ps(_mm512_broadcastss_ps(dd), _mm512_cvtepi32_ps(sumi), acc);
    }
};

// The other K-quants read the activation's Q8_K bytes directly (a layout is their copy).
struct Q8_KBytes {
    const uint8_t* p;
    float d;
};
struct DirectActivation {
    using X = Q8_KBytes;
    static X prep(const uint8_t* x) { return {x, load_f32(x)}; }
    static void lay_out(const uint8_t* x, __m512i* v) { copy_superblock(x, v); }
    static X view(const __m512i* v) { return prep(reinterpret_cast<const uint8_t*>(v)); }
};

// Q6_K and Q3_K: bytes q (0..63, 0..7) in four runs of 64, 16 signed scales, one d; the
// products are sum(scale * q * x) - offset * sum(scale * bsums) (offset 32, 4).
struct OffsetKQuantWeights {
    __m512i q[2][2];       // [h][run]
    __m512i scales[2][2];  // the words that multiply them
    __m256i sc16;
    float d;
};
template <int OffsetShift>
[[gnu::always_inline]] inline void offset_dot(const OffsetKQuantWeights& u, const Q8_KBytes& xd, __m512& acc) {
    const __m256i offset = _mm256_madd_epi16(load256(xd.p + kQ8_KBsums), u.sc16);
    __m512i sumi = _mm512_zextsi256_si512(_mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, OffsetShift)));
    for (int h = 0; h < 2; ++h) {
        const uint8_t* qx = xd.p + kQ8_KQs + 128 * h;
        sumi = scaled_run(sumi, u.q[h][0], qx, u.scales[h][0]);
        sumi = scaled_run(sumi, u.q[h][1], qx + 64, u.scales[h][1]);
    }
    acc = _mm512_fmadd_ps(_mm512_set1_ps(u.d * xd.d), _mm512_cvtepi32_ps(sumi), acc);
}
// Sub-blocks 8h..8h+3 and 8h+4..8h+7's scales for the runs of half h.
inline void run_scales(__m256i sc16, __m512i (&out)[2][2]) {
    const __m512i scales = _mm512_castsi256_si512(sc16);
    for (int h = 0; h < 2; ++h) {
        out[h][0] = _mm512_permutexvar_epi16(word_groups(8 * h, 3), scales);
        out[h][1] = _mm512_permutexvar_epi16(word_groups(8 * h + 4, 3), scales);
    }
}

struct Q6_KBlocks : DirectActivation {
    static constexpr int64_t kW = kQ6_K;
    static constexpr bool kMin = false;
    using W = OffsetKQuantWeights;
    [[gnu::always_inline]] static W unpack(const uint8_t* w) {
        const __m512i m30 = _mm512_set1_epi8(0x30);
        W u;
        u.sc16 = _mm256_cvtepi8_epi16(load128(w + 192));
        run_scales(u.sc16, u.scales);
        for (int h = 0; h < 2; ++h) {
            const __m512i ql = load512(w + 64 * h);
            const __m512i hb = with_shifted_high<2>(w + 128 + 32 * h);  // bits of elements 0..31 | 32..63 at bits 0,1
            u.q[h][0] = nibble_or(ql, _mm512_and_si512(_mm512_slli_epi16(hb, 4), m30));
            u.q[h][1] = nibble_or(_mm512_srli_epi16(ql, 4), _mm512_and_si512(hb, m30));
        }
        u.d = f16_at(w + 208);
        return u;
    }
    [[gnu::always_inline]] static void dot(const W& u, const X& x, __m512& acc, __m256&) { offset_dot<5>(u, x, acc); }
};

struct Q3_KBlocks : DirectActivation {
    static constexpr int64_t kW = kQ3_K;
    static constexpr bool kMin = false;
    using W = OffsetKQuantWeights;
    [[gnu::always_inline]] static W unpack(const uint8_t* w) {
        const __m512i m3 = _mm512_set1_epi8(3);
        const __m512i four = _mm512_set1_epi8(4);
        W u;
        u.sc16 = _mm256_cvtepi8_epi16(q3k_scales(w + 96));
        run_scales(u.sc16, u.scales);
        const __m512i hm2 = twice32(w);
        for (int h = 0; h < 2; ++h) {
            const __m512i q2 = with_shifted_high<2>(w + 32 + 32 * h);
            const __m512i z0 = _mm512_and_si512(q2, m3);                          // shifts 0, 2
            const __m512i z1 = _mm512_and_si512(_mm512_srli_epi16(q2, 4), m3);    // shifts 4, 6
            u.q[h][0] = _mm512_mask_add_epi8(z0, _mm512_test_epi8_mask(hm2, bit_pair(4 * h, 4 * h + 1)), z0, four);
            u.q[h][1] = _mm512_mask_add_epi8(z1, _mm512_test_epi8_mask(hm2, bit_pair(4 * h + 2, 4 * h + 3)), z1, four);
        }
        u.d = f16_at(w + 108);
        return u;
    }
    [[gnu::always_inline]] static void dot(const W& u, const X& x, __m512& acc, __m256&) { offset_dot<2>(u, x, acc); }
};

struct Q2_KBlocks : DirectActivation {
    static constexpr int64_t kW = kQ2_K;
    static constexpr bool kMin = true;
    struct W {
        __m512i q[2][2];
        __m512i scales[2][2];
        __m256i mins;
        float d, dmin;
    };
    [[gnu::always_inline]] static W unpack(const uint8_t* w) {
        const __m512i m3 = _mm512_set1_epi8(3);
        W u;
        const __m128i packed = load128(w);
        const __m128i scl = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
        u.mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
        run_scales(_mm256_cvtepu8_epi16(scl), u.scales);
        for (int h = 0; h < 2; ++h) {
            const __m512i q2 = with_shifted_high<2>(w + 16 + 32 * h);
            u.q[h][0] = _mm512_and_si512(q2, m3);
            u.q[h][1] = _mm512_and_si512(_mm512_srli_epi16(q2, 4), m3);
        }
        u.d = f16_at(w + 80);
        u.dmin = f16_at(w + 82);
        return u;
    }
    [[gnu::always_inline]] static void dot(const W& u, const X& xd, __m512& acc, __m256& accm) {
        const __m256i msum = _mm256_madd_epi16(load256(xd.p + kQ8_KBsums), u.mins);
        accm = _mm256_fmadd_ps(_mm256_set1_ps(xd.d * u.dmin), _mm256_cvtepi32_ps(msum), accm);
        __m512i sumi = _mm512_setzero_si512();
        for (int h = 0; h < 2; ++h) {
            const uint8_t* qx = xd.p + kQ8_KQs + 128 * h;
            sumi = scaled_run(sumi, u.q[h][0], qx, u.scales[h][0]);
            sumi = scaled_run(sumi, u.q[h][1], qx + 64, u.scales[h][1]);
        }
        acc = _mm512_fmadd_ps(_mm512_set1_ps(xd.d * u.d), _mm512_cvtepi32_ps(sumi), acc);
    }
};

template <class Blocks>
struct KRows {
    static constexpr int64_t kAheadBytes = tuning::kRowDotPrefetchBytes;
    static constexpr int kLocality = kIntoL1;
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        constexpr int64_t kW = Blocks::kW;
        const int64_t nb = n / 256;
        __m512 acc[R];
        __m256 accm[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm512_setzero_ps();
            accm[r] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nb; ++i) {
            const auto xp = Blocks::prep(x + i * kQ8_K);
            const int64_t pf = ahead.at(i * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wi = w + r * rb + i * kW;
                prefetch_span<kW, kLocality>(wi + pf);
                Blocks::dot(Blocks::unpack(wi), xp, acc[r], accm[r]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = total_of(acc[r], accm[r]);
        store_sums<R>(out, out_stride, acc);
    }
    // A row's sum before the reduction: acc, less the mins term for the bodies that have one.
    static __m512 total_of(__m512 acc, __m256 accm) {
        if constexpr (Blocks::kMin) return _mm512_sub_ps(acc, _mm512_zextps256_ps512(accm));
        return acc;
    }

    // ---- batches (dot_rows_batch): each weight superblock unpacked once for up to kMaxBatch
    // activation rows, laid out kKLayoutRegs registers per superblock.
    static constexpr bool kTailMin = false;
    static int64_t layout_regs(int64_t n) { return n / 256 * kKLayoutRegs; }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        for (int64_t i = 0; i < n / 256; ++i) Blocks::lay_out(x + i * kQ8_K, v + i * kKLayoutRegs);
    }
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int /*group_rows*/,
                          __m512 (&total)[B], float (&/*tail_min*/)[B]) {
        constexpr int64_t kW = Blocks::kW;
        __m512 acc[B];
        __m256 accm[B];
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) {
            acc[i] = _mm512_setzero_ps();
            accm[i] = _mm256_setzero_ps();
        }
        for (int64_t s = 0; s < n / 256; ++s) {
            const uint8_t* ws = w + s * kW;
            prefetch_span<kW, kLocality>(ws + pf);
            const typename Blocks::W u = Blocks::unpack(ws);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) Blocks::dot(u, Blocks::view(x + i * x_regs + s * kKLayoutRegs), acc[i], accm[i]);
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of(acc[i], accm[i]);
    }
};

// ---------------------------------------------------------------- IQ4_XS (x Q8_K)

// Eight 32-element groups per super-block, each with a signed 6-bit scale; the nibbles look
// up the levels + 128 (iq4_levels_u8) and the activation's 128 * sum(x) comes off through
// the start value, so each int32 lane holds an exact part of sum(level * x) of one group.
// Two groups per register; their lanes are converted to float and multiplied by the groups'
// scales (exact: |lane| <= 4 * 127 * 128 < 2^16, |scale| <= 32), the four registers added in
// float, and the block's sum added times d_w * d_x.
// Locality: where the weights are prefetched (active_prefetch_level), as for QuadRows
// (row_dot_legacy_avx512.cpp).
template <int Locality>
struct IQ4_XSRows {
    static constexpr int64_t kW = kIQ4_XS, kX = kQ8_K;
    static constexpr int64_t kAheadBytes = tuning::kIQ4_XSPrefetchBytes;
    static constexpr int kLocality = Locality;

    // The nibbles of groups 2k and 2k+1 (32 bytes at qs) in element order: group 2k's low
    // nibbles (its elements 0..15), its high nibbles (16..31), then group 2k+1's.
    static __m512i group_pair_nibbles(const uint8_t* qs) {
        const __m512i q = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3),
                                                   _mm512_castsi256_si512(load256(qs)));
        const __m512i shifted = _mm512_srlv_epi64(q, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
        return _mm512_and_si512(shifted, low_nibbles());
    }
    // The eight signed group scales of a block as int32 lanes 0..7 (and again in 8..15).
    static __m512i group_scales(const uint8_t* wb) {
        const __m512i low = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(load_u32(wb + 4))),
                                              _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 4, 8, 12, 16, 20, 24, 28));
        const __m512i high = _mm512_srlv_epi32(_mm512_set1_epi32(static_cast<int>(load_u16(wb + 2))),
                                               _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14));
        const __m512i ls = _mm512_or_si512(_mm512_and_si512(low, _mm512_set1_epi32(0xF)),
                                           _mm512_slli_epi32(_mm512_and_si512(high, _mm512_set1_epi32(3)), 4));
        return _mm512_sub_epi32(ls, _mm512_set1_epi32(32));
    }
    // A weight block unpacked: per group pair k, the levels + 128 and the two groups' scales
    // (lanes 0..7 and 8..15, as floats).
    struct Unpacked {
        __m512i levels[4];
        __m512 scales[4];
    };
    static Unpacked unpack(const uint8_t* wb) {
        Unpacked u;
        const __m512i scales = group_scales(wb);
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            u.levels[k] = _mm512_shuffle_epi8(iq4_levels_u8(), group_pair_nibbles(wb + 8 + 32 * k));
            u.scales[k] = _mm512_cvtepi32_ps(_mm512_permutexvar_epi32(
                _mm512_setr_epi32(2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k, 2 * k + 1, 2 * k + 1, 2 * k + 1,
                                  2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1, 2 * k + 1),
                scales));
        }
        return u;
    }
    // An activation block's side: its quants per group pair and -128 * their sums.
    static void prep(const uint8_t* xb, __m512i (&xs)[4], __m512i (&init)[4]) {
        const __m512i offset = _mm512_set1_epi8(static_cast<char>(128));
        const __m512i zero = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
            xs[k] = load512(xb + kQ8_KQs + 64 * k);
            init[k] = _mm512_sub_epi32(zero, dpbusd(zero, offset, xs[k]));
        }
    }
    // sum over the block of scale * level * x, spread over float lanes: each group pair's
    // exact int32 sums times their scales (exact in float: 16 + 6 bits), added in float.
    static __m512 block_sum(const Unpacked& u, const __m512i* xs, const __m512i* init) {
        __m512 sum = _mm512_mul_ps(_mm512_cvtepi32_ps(dpbusd(init[0], u.levels[0], xs[0])), u.scales[0]);
#pragma GCC unroll 3
        for (int k = 1; k < 4; ++k) sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dpbusd(init[k], u.levels[k], xs[k])), u.scales[k], sum);
        return sum;
    }
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        const int64_t nb = n / 256;
        __m512 acc[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* xb = x + b * kX;
            __m512i xs[4], init[4];
            prep(xb, xs, init);
            const float dx = load_f32(xb);
            const int64_t pf = ahead.at(b * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wb = w + r * rb + b * kW;
                prefetch_span<kW, kLocality>(wb + pf);
                acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(f16_at(wb) * dx), block_sum(unpack(wb), xs, init), acc[r]);
            }
        }
        store_sums<R>(out, out_stride, acc);
    }

    // ---- batches (dot_rows_batch): each activation block laid out as prep() has it, in
    // 9 registers (xs[4], init[4], d), each weight block unpacked once for all B rows.
    static constexpr bool kTailMin = false;
    static int64_t layout_regs(int64_t n) { return n / 256 * 9; }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        for (int64_t b = 0; b < n / 256; ++b, v += 9) {
            const uint8_t* xb = x + b * kX;
            __m512i xs[4], init[4];
            prep(xb, xs, init);
            for (int k = 0; k < 4; ++k) {
                v[k] = xs[k];
                v[4 + k] = init[k];
            }
            v[8] = _mm512_castps_si512(_mm512_set1_ps(load_f32(xb)));
        }
    }
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int /*group_rows*/,
                          __m512 (&total)[B], float (&tail_min)[B]) {
        const int64_t nb = n / 256;
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) {
            total[i] = _mm512_setzero_ps();
            tail_min[i] = 0.0f;
        }
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* wb = w + b * kW;
            prefetch_span<kW, kLocality>(wb + pf);
            const Unpacked u = unpack(wb);
            const float dw = f16_at(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + 9 * b;
                const float dx = _mm512_cvtss_f32(_mm512_castsi512_ps(v[8]));
                total[i] = _mm512_fmadd_ps(_mm512_set1_ps(dw * dx), block_sum(u, v, v + 4), total[i]);
            }
        }
    }
};

}  // namespace

RowDotKernels avx512_kquant_row_dots(GgmlType weight_type, PrefetchLevel prefetch) {
    const bool to_l2 = prefetch == PrefetchLevel::L2;
    switch (weight_type) {
        case GgmlType::Q2_K: return rows_kernels<KRows<Q2_KBlocks>>(GgmlType::Q8_K);
        case GgmlType::Q3_K: return rows_kernels<KRows<Q3_KBlocks>>(GgmlType::Q8_K);
        case GgmlType::Q4_K: return rows_kernels<KRows<Q4_KOrQ5_KBlocks<false>>>(GgmlType::Q8_K);
        case GgmlType::Q5_K: return rows_kernels<KRows<Q4_KOrQ5_KBlocks<true>>>(GgmlType::Q8_K);
        case GgmlType::Q6_K: return rows_kernels<KRows<Q6_KBlocks>>(GgmlType::Q8_K);
        case GgmlType::IQ4_XS:
            return to_l2 ? rows_kernels<IQ4_XSRows<kIntoL2>>(GgmlType::Q8_K) : rows_kernels<IQ4_XSRows<kIntoL1>>(GgmlType::Q8_K);
        default: return {};
    }
}

}  // namespace inferscope::simd
