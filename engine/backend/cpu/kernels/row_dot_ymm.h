#pragma once
// Row dot products and activation encoders on 256-bit vectors, compiled twice: with AVX2
// flags (row_dot_avx2.cpp) and with AVX2 + AVX-VNNI (row_dot_avxvnni.cpp, __AVXVNNI__
// defined, where the legacy blocks' byte products go through VPDPBUSD). Everything stays in
// an anonymous namespace, so each copy keeps its own instructions.
//
// Semantics (see row_dot.h): the same quantity as vec_dot / quantize_row in
// engine/formats/quant.h.
//  * Encoders are bit-identical to quantize_row: the vector paths reproduce its rounding
//    (round to nearest even via cvtps2dq under the default MXCSR, int8 saturation by the
//    pack instructions, f16 scales via vcvtps2ph with round-to-nearest-even), and blocks the
//    vector code does not cover exactly (infinities, NaNs, a denormal maximum whose
//    multiplier overflows) go through the scalar replicas in simd_encode_fallback.h.
//  * Dot products: the integer sum of each block (or K-quant sub-block) is exact, as in the
//    reference; the float steps are the reference's (d_w*d_x times the integer sum, minus
//    the min/bsums term for K-quants with mins) but accumulated in several vector lanes and
//    with fused multiply-adds, so results differ from the scalar reference by float
//    summation order only. F16/BF16 products are exact in float, so there the fma changes
//    nothing but the order of the sums (the reference accumulates in double).
//  * Batches (dot_rows_batch, for every format): each weight row is unpacked once for
//    several activation rows, and each activation row's float steps are those of its one-row
//    kernel, so every result has dot_rows' bits.
//
// Integer tricks:
//  * unsigned-by-signed products with _mm256_maddubs_epi16: the weight's quant is kept
//    unsigned (Q4_0: 0..15 instead of -8..7) and the offset is subtracted as offset*sum(x),
//    which for the K-quants comes from the activation's bsums. All pair sums stay far from
//    the int16 saturation bound, so the sums are exact for every int8 activation.
//  * Q8_0 x Q8_0 uses |x| * (w with x's sign) (_mm256_sign_epi8), exact for every
//    activation (|-128| = 128 is a valid unsigned byte) and every weight except -128, which
//    no Q8_0 quantizer writes (ggml's and ours round w*127/max|w| into -127..127): a weight
//    of -128 facing a negative activation would come out as -128 * |x| instead of 128 * |x|.
//    (The AVX-512 kernels have no such exception.)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/batch_rows.h"
#include "engine/backend/cpu/kernels/q8_encoders.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/row_dot_common.h"
#include "engine/backend/cpu/kernels/simd_encode_fallback.h"
#include "engine/backend/cpu/kernels/tuning_avx2.h"
#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

namespace inferscope::simd {
namespace {

// Block sizes and field offsets (kQ4_0, kQ8_KBsums, …).
using namespace block_layouts;
namespace tuning = avx2_tuning;

// ---------------------------------------------------------------- helpers

inline __m128i load64(const uint8_t* p) { return _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)); }
inline void store256(uint8_t* p, __m256i v) { _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), v); }

// The f16 values at p, p + stride, p + 2*stride, p + 3*stride, as four floats.
inline __m128 f16x4(const uint8_t* p, int64_t stride) {
    const uint64_t v = static_cast<uint64_t>(load_u16(p)) | static_cast<uint64_t>(load_u16(p + stride)) << 16 |
                       static_cast<uint64_t>(load_u16(p + 2 * stride)) << 32 |
                       static_cast<uint64_t>(load_u16(p + 3 * stride)) << 48;
    return _mm_cvtph_ps(_mm_cvtsi64_si128(static_cast<long long>(v)));
}

// Lane k of v in all eight lanes.
inline __m256 lane(__m256 v, int k) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(k)); }

inline __m256i ones16() { return _mm256_set1_epi16(1); }
inline __m256i low_nibbles() { return _mm256_set1_epi8(0x0F); }

// The 32 nibbles of 16 bytes in element order: low nibbles (elements 0..15), then high ones
// (a broadcast load, then the high 128-bit lane shifted by 4).
inline __m256i nibbles32(const uint8_t* qs) {
    const __m256i q = _mm256_broadcastsi128_si256(load128(qs));
    return _mm256_and_si256(_mm256_srlv_epi32(q, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4)), low_nibbles());
}

// The two f16 values at p and p + 2 of four blocks (p, p + stride, ...) as floats:
// [a0 b0 a1 b1 a2 b2 a3 b3].
inline __m256 f16x2x4(const uint8_t* p, int64_t stride) {
    const uint64_t lo = static_cast<uint64_t>(load_u32(p)) | static_cast<uint64_t>(load_u32(p + stride)) << 32;
    const uint64_t hi = static_cast<uint64_t>(load_u32(p + 2 * stride)) | static_cast<uint64_t>(load_u32(p + 3 * stride)) << 32;
    return _mm256_cvtph_ps(_mm_insert_epi64(_mm_cvtsi64_si128(static_cast<long long>(lo)), static_cast<long long>(hi), 1));
}

// 0xFF in byte j where bit j of `bits` is set, 0 elsewhere.
inline __m256i bits_to_bytes(uint32_t bits) {
    const __m256i spread = _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101, 0x0202020202020202,
                                              0x0303030303030303);
    const __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(bits)), spread);
    const __m256i select = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    return _mm256_cmpeq_epi8(_mm256_and_si256(v, select), select);
}

// Byte-wise ((v >> Bit) & 1) << Out, for a bit and an output position of the same byte.
template <int Bit, int Out>
inline __m256i move_bit(__m256i v) {
    const __m256i mask = _mm256_set1_epi8(static_cast<char>(1 << Out));
    if constexpr (Bit < Out) {
        return _mm256_and_si256(_mm256_slli_epi16(v, Out - Bit), mask);
    } else if constexpr (Bit == Out) {
        return _mm256_and_si256(v, mask);
    } else {
        return _mm256_and_si256(_mm256_srli_epi16(v, Bit - Out), mask);
    }
}

// Per-lane byte shuffle that broadcasts int16 word `lo_word` over the low 128-bit lane and
// `hi_word` over the high one (each lane of the source holding the same eight words).
inline __m256i word_pair_shuffle(int lo_word, int hi_word) {
    return _mm256_setr_m128i(_mm_set1_epi16(static_cast<short>(((2 * lo_word + 1) << 8) | (2 * lo_word))),
                             _mm_set1_epi16(static_cast<short>(((2 * hi_word + 1) << 8) | (2 * hi_word))));
}

// ---------------------------------------------------------------- prefetching, row loops

// Each kernel step prefetches the cache lines of the weight bytes it reads
// tuning::kRowDotPrefetchBytes ahead; the rows of a matrix are contiguous, so the last steps
// of a row prefetch the start of the next one.

template <int64_t Bytes>
inline void prefetch_span(const uint8_t* p) {
    // Addresses at most 64 bytes apart over the step: every line of the stream is touched.
    for (int64_t o = 0; o < Bytes; o += 64) _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// The rows one after the other (each row's dot prefetches into the next ones).
template <RowDotFn Dot>
void dot_rows(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x, float* out) {
    for (int64_t r = 0; r < n_rows; ++r) out[r] = Dot(n, w + static_cast<uint64_t>(r) * row_bytes, x);
}

// ---------------------------------------------------------------- F16 / BF16

// Eight halves as floats: F16 converted, BF16 shifted (a bf16 is the top half of a float).
inline __m256 f16x8(const uint8_t* p) { return _mm256_cvtph_ps(load128(p)); }
inline __m256 bf16x8(const uint8_t* p) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(load128(p)), 16));
}
inline float bf16_at(const uint8_t* p) {
    const uint32_t bits = static_cast<uint32_t>(load_u16(p)) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
}

// The F16 and BF16 dot products of B activation rows (row b at x + b * x_stride) against one
// weight row: widen8 converts eight halves, at one (the tail's). Each
// activation row keeps its own four accumulators, summed in the same order for every B, so
// a batch gives each row the bits of its one-row product.
template <__m256 (*widen8)(const uint8_t*), float (*at)(const uint8_t*)>
struct HalfRows {
    template <int B>
    static void rows(int64_t n, const uint8_t* w, const uint8_t* x, uint64_t x_stride, float* out, int64_t out_stride) {
        __m256 acc[B][4];
#pragma GCC unroll 8
        for (int b = 0; b < B; ++b) acc[b][0] = acc[b][1] = acc[b][2] = acc[b][3] = _mm256_setzero_ps();
        int64_t i = 0;
        for (; i + 32 <= n; i += 32) {
            const uint8_t* wi = w + 2 * i;
            prefetch_span<64>(wi + tuning::kRowDotPrefetchBytes);
            const __m256 w0 = widen8(wi), w1 = widen8(wi + 16), w2 = widen8(wi + 32), w3 = widen8(wi + 48);
#pragma GCC unroll 8
            for (int b = 0; b < B; ++b) {
                const uint8_t* xi = x + b * x_stride + 2 * i;
                acc[b][0] = _mm256_fmadd_ps(w0, widen8(xi), acc[b][0]);
                acc[b][1] = _mm256_fmadd_ps(w1, widen8(xi + 16), acc[b][1]);
                acc[b][2] = _mm256_fmadd_ps(w2, widen8(xi + 32), acc[b][2]);
                acc[b][3] = _mm256_fmadd_ps(w3, widen8(xi + 48), acc[b][3]);
            }
        }
        for (; i + 8 <= n; i += 8) {
            const __m256 wv = widen8(w + 2 * i);
#pragma GCC unroll 8
            for (int b = 0; b < B; ++b) acc[b][0] = _mm256_fmadd_ps(wv, widen8(x + b * x_stride + 2 * i), acc[b][0]);
        }
#pragma GCC unroll 8
        for (int b = 0; b < B; ++b) {
            float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc[b][0], acc[b][1]), _mm256_add_ps(acc[b][2], acc[b][3])));
            for (int64_t t = i; t < n; ++t) sum += at(w + 2 * t) * at(x + b * x_stride + 2 * t);  // exact in float
            out[b * out_stride] = sum;
        }
    }
};
using F16Rows = HalfRows<&f16x8, &f16_at>;
using BF16Rows = HalfRows<&bf16x8, &bf16_at>;


// ---------------------------------------------------------------- legacy 32-element blocks

#if defined(__AVXVNNI__)
// acc + the sums of each dword's four u8 x s8 products, exact in int32.
inline __m256i add_byte_products(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_avx_epi32(acc, u8, s8); }
inline __m256i byte_products(__m256i u8, __m256i s8) { return add_byte_products(_mm256_setzero_si256(), u8, s8); }
#else
// Through int16 pair sums: exact for every operand range used here (see "Integer tricks").
inline __m256i byte_products(__m256i u8, __m256i s8) { return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), ones16()); }
inline __m256i add_byte_products(__m256i acc, __m256i u8, __m256i s8) { return _mm256_add_epi32(acc, byte_products(u8, s8)); }
#endif

// Each block type unpacks a weight block's 32 quants into one register (unpack: done once
// for all the activation rows of a batch) and gives their exact integer dot product with an
// activation block, spread over eight int32 lanes (sum). What sum needs of the activation
// block alone comes from prepare(activation block), which a batch computes once per call
// (kPrepared; the others' is zero and unused). The lanes are the same either way, so one
// row and batches give the same bits.

// Quants q with an offset (value q - Offset): the prepared term is -sum(Offset * x) per lane.
template <int Offset>
struct OffsetSum {
    static constexpr bool kPrepared = true;
    static __m256i prepare(const uint8_t* bx) {
        return _mm256_sub_epi32(_mm256_setzero_si256(), byte_products(_mm256_set1_epi8(Offset), load256(bx + 2)));
    }
    static __m256i sum(__m256i q, const uint8_t* bx, __m256i minus_offset) {
        return add_byte_products(minus_offset, q, load256(bx + 2));
    }
};

// Signed weights or levels s against x as |x| * (s with the sign of x): the prepared term is |x|.
struct SignedSum {
    static constexpr bool kPrepared = true;
    static __m256i prepare(const uint8_t* bx) { return _mm256_abs_epi8(load256(bx + 2)); }
    static __m256i sum(__m256i s, const uint8_t* bx, __m256i abs_x) {
        return byte_products(abs_x, _mm256_sign_epi8(s, load256(bx + 2)));
    }
};

// Unsigned quants against Q8_1: nothing to prepare.
struct PlainSum {
    static constexpr bool kPrepared = false;
    static __m256i prepare(const uint8_t*) { return _mm256_setzero_si256(); }
    static __m256i sum(__m256i q, const uint8_t* bx, __m256i) { return byte_products(q, load256(bx + 4)); }
};

// The quants of a 5-bit block, nibble + 16 * (bit j of the four bytes at qh), in 0..31.
inline __m256i five_bits(const uint8_t* qh, const uint8_t* qs) {
    return _mm256_or_si256(nibbles32(qs), _mm256_and_si256(bits_to_bytes(load_u32(qh)), _mm256_set1_epi8(16)));
}

struct Q8_0Sum : SignedSum {  // see "Integer tricks" for the weight -128
    static constexpr int64_t kW = kQ8_0, kX = kQ8_0;
    static __m256i unpack(const uint8_t* bw) { return load256(bw + 2); }
};

struct Q4_0Sum : OffsetSum<8> {  // q in 0..15
    static constexpr int64_t kW = kQ4_0, kX = kQ8_0;
    static __m256i unpack(const uint8_t* bw) { return nibbles32(bw + 2); }
};

struct Q5_0Sum : OffsetSum<16> {  // q = nibble + 16*bit in 0..31
    static constexpr int64_t kW = kQ5_0, kX = kQ8_0;
    static __m256i unpack(const uint8_t* bw) { return five_bits(bw + 2, bw + 6); }
};

struct Q4_1Sum : PlainSum {  // q in 0..15
    static constexpr int64_t kW = kQ4_1, kX = kQ8_1;
    static __m256i unpack(const uint8_t* bw) { return nibbles32(bw + 4); }
};

struct Q5_1Sum : PlainSum {  // q = nibble + 16*bit in 0..31
    static constexpr int64_t kW = kQ5_1, kX = kQ8_1;
    static __m256i unpack(const uint8_t* bw) { return five_bits(bw + 4, bw + 8); }
};

// The sixteen IQ4 levels in both 128-bit lanes, for _mm256_shuffle_epi8 lookups by nibble.
inline __m256i iq4_levels() {
    return _mm256_broadcastsi128_si256(load128(reinterpret_cast<const uint8_t*>(kIQ4NLValues)));
}

// The levels of the 32 elements whose nibbles start at qs.
inline __m256i iq4_levels_of(const uint8_t* qs) { return _mm256_shuffle_epi8(iq4_levels(), nibbles32(qs)); }

// Levels given x's signs: multiplied by |x|, they give level * x exactly for every int8 x
// (|-128| = 128 is a valid unsigned byte; no level is -128, so negating one cannot overflow,
// and int16 pair sums 2 * 128 * 127 < 32768).
inline __m256i levels_signed_as(__m256i levels, __m256i qx) { return _mm256_sign_epi8(levels, qx); }

struct IQ4_NLSum : SignedSum {  // Q4_0's layout with the nibbles looked up in the level table
    static constexpr int64_t kW = kIQ4_NL, kX = kQ8_0;
    static __m256i unpack(const uint8_t* bw) { return iq4_levels_of(bw + 2); }
};

// The f16 scales of four blocks (p, p + stride, ...) as floats: [d0 d1 d2 d3], or with the
// mins (Q4_1, Q5_1) and the activation sums (Q8_1) [d0 m0 d1 m1 d2 m2 d3 m3].
template <bool WithMin>
inline auto block_scales(const uint8_t* p, int64_t stride) {
    if constexpr (WithMin) {
        return f16x2x4(p, stride);
    } else {
        return f16x4(p, stride);
    }
}
// The products of the weight's and the activation's block scales: [p0 p1 p2 p3 p0 p1 p2 p3]
// (both 128-bit lanes the same, so that an in-lane permute broadcasts one), or with the mins
// [d0 m0 ... d3 m3] (products d_w*d_x and m_w*s_x).
inline __m256 scale_products(__m128 a, __m128 b) {
    const __m128 p = _mm_mul_ps(a, b);
    return _mm256_set_m128(p, p);
}
inline __m256 scale_products(__m256 a, __m256 b) { return _mm256_mul_ps(a, b); }

// Block K's d_w*d_x of scale_products in all eight lanes.
template <bool WithMin, int K>
inline __m256 block_scale(__m256 d) {
    if constexpr (WithMin) {
        return lane(d, 2 * K);
    } else {
        return _mm256_permute_ps(d, K * 0x55);
    }
}

// Where the legacy kernels get an activation row's block scales (scales(i, b): blocks b..b+3
// of row i, as block_scales gives them) and prepared terms (prepared(i, b)): computed from
// the blocks of one row at x (one row's dot) ...
template <class Block, bool WithMin>
struct FromBlocks {
    const uint8_t* x;
    auto scales(int, int64_t b) const { return block_scales<WithMin>(x + b * Block::kX, Block::kX); }
    __m256i prepared(int, int64_t b) const { return Block::prepare(x + b * Block::kX); }
};

// ... or laid out once per call for all the weight rows (rows of nb blocks, one after the other).
template <class Block, bool WithMin>
struct LaidOut {
    static constexpr int64_t kScalesPerBlock = WithMin ? 2 : 1;
    const float* block_scales;
    const uint8_t* prepared_terms;  // 32 bytes per block (Block::kPrepared)
    int64_t nb;
    auto scales(int i, int64_t b) const {
        const float* p = block_scales + (i * nb + b) * kScalesPerBlock;
        if constexpr (WithMin) {
            return _mm256_loadu_ps(p);
        } else {
            return _mm_loadu_ps(p);
        }
    }
    __m256i prepared(int i, int64_t b) const {
        if constexpr (Block::kPrepared) {
            return load256(prepared_terms + (i * nb + b) * 32);
        } else {
            return _mm256_setzero_si256();
        }
    }
};

// Block b + K: its weights unpacked once, its integer sum with each activation row's block
// (at x + i * x_stride) times its scale added into that row's accumulator K % 2.
template <class Block, bool WithMin, int K, int B, class Activations>
inline void legacy_block(const uint8_t* w, const uint8_t* x, uint64_t x_stride, const Activations& acts, int64_t b,
                         const __m256 (&d)[B], __m256 (&acc)[B][2]) {
    const __m256i q = Block::unpack(w + (b + K) * Block::kW);
#pragma GCC unroll 8
    for (int i = 0; i < B; ++i) {
        const __m256i s = Block::sum(q, x + i * x_stride + (b + K) * Block::kX, acts.prepared(i, b + K));
        acc[i][K % 2] = _mm256_fmadd_ps(block_scale<WithMin, K>(d[i]), _mm256_cvtepi32_ps(s), acc[i][K % 2]);
    }
}

// The dot products of one weight row with B activation rows (row i at x + i * x_stride, its
// scales and prepared terms from acts), to out[i * out_stride]:
// sum over blocks of (d_w*d_x) * sumi [+ m_w * s_x when WithMin]. Four blocks per iteration,
// block k's product added into accumulator k % 2 of its activation row: two chains per row
// keep four activation rows' accumulators in registers beside the unpacked weights. One row
// (dot_legacy) and batches (dot_rows_batch_legacy) both run it, so their bits agree.
template <class Block, bool WithMin, int B, class Activations>
void legacy_rows_of(int64_t nb, const uint8_t* w, const uint8_t* x, uint64_t x_stride, const Activations& acts, float* out,
                    int64_t out_stride) {
    __m256 acc[B][2], accm[B];  // accm (WithMin): [d_w*d_x, m_w*s_x] pairs; the odd lanes count
    for (int i = 0; i < B; ++i) acc[i][0] = acc[i][1] = accm[i] = _mm256_setzero_ps();
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4) {
        const uint8_t* wb = w + b * Block::kW;
        prefetch_span<4 * Block::kW>(wb + tuning::kRowDotPrefetchBytes);
        const auto dw = block_scales<WithMin>(wb, Block::kW);
        __m256 d[B];
#pragma GCC unroll 8
        for (int i = 0; i < B; ++i) {
            d[i] = scale_products(dw, acts.scales(i, b));
            if constexpr (WithMin) accm[i] = _mm256_add_ps(accm[i], d[i]);
        }
        legacy_block<Block, WithMin, 0>(w, x, x_stride, acts, b, d, acc);
        legacy_block<Block, WithMin, 1>(w, x, x_stride, acts, b, d, acc);
        legacy_block<Block, WithMin, 2>(w, x, x_stride, acts, b, d, acc);
        legacy_block<Block, WithMin, 3>(w, x, x_stride, acts, b, d, acc);
    }
    float tail_min[B] = {};
    for (; b < nb; ++b) {
        const uint8_t* wb = w + b * Block::kW;
        const __m256i q = Block::unpack(wb);
        for (int i = 0; i < B; ++i) {
            const uint8_t* xb = x + i * x_stride + b * Block::kX;
            const __m256 d = _mm256_set1_ps(f16_at(wb) * f16_at(xb));
            acc[i][0] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(Block::sum(q, xb, acts.prepared(i, b))), acc[i][0]);
            if constexpr (WithMin) tail_min[i] += f16_at(wb + 2) * f16_at(xb + 2);
        }
    }
    for (int i = 0; i < B; ++i) {
        float sum = hsum(_mm256_add_ps(acc[i][0], acc[i][1]));
        if constexpr (WithMin) {
            const __m256 odd = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
            sum += hsum(_mm256_and_ps(accm[i], odd)) + tail_min[i];
        }
        out[i * out_stride] = sum;
    }
}

template <class Block, bool WithMin>
float dot_legacy(int64_t n, const uint8_t* w, const uint8_t* x) {
    float out = 0.0f;
    legacy_rows_of<Block, WithMin, 1>(n / 32, w, x, 0, FromBlocks<Block, WithMin>{x}, &out, 1);
    return out;
}

// ---------------------------------------------------------------- K-quants (x Q8_K)

// sum(q * x) over one 32-element run weighted by run_scales (int16, per 128-bit lane), as int32x8.
inline __m256i scaled_run_by(__m256i q, const uint8_t* qx, __m256i run_scales) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(q, load256(qx)), run_scales);
}

// sum(q * x) over one 32-element run, each half of it weighted by its int16 scale (the
// shuffle of `scales` that puts the run's two scales in the two 128-bit lanes), as int32x8.
inline __m256i scaled_run(__m256i q, const uint8_t* qx, __m256i scales, __m256i shuffle) {
    return scaled_run_by(q, qx, _mm256_shuffle_epi8(scales, shuffle));
}

// Four 32-element runs of unsigned values (run k weighted by the int16 scales 2k and 2k + 1
// of `scales`, one per 16 elements) against 128 activation quants, at qx + i * x_stride for
// each of the B activation rows: added to sumi[i].
template <int B>
inline void add_four_scaled_runs(__m256i q0, __m256i q1, __m256i q2, __m256i q3, const uint8_t* qx, uint64_t x_stride,
                                 __m256i scales, __m256i (&sumi)[B]) {
#pragma GCC unroll 8
    for (int i = 0; i < B; ++i) {
        const uint8_t* qi = qx + i * x_stride;
        const __m256i p0 = scaled_run(q0, qi, scales, word_pair_shuffle(0, 1));
        const __m256i p1 = scaled_run(q1, qi + 32, scales, word_pair_shuffle(2, 3));
        const __m256i p2 = scaled_run(q2, qi + 64, scales, word_pair_shuffle(4, 5));
        const __m256i p3 = scaled_run(q3, qi + 96, scales, word_pair_shuffle(6, 7));
        sumi[i] = _mm256_add_epi32(sumi[i], _mm256_add_epi32(_mm256_add_epi32(p0, p1), _mm256_add_epi32(p2, p3)));
    }
}

// The super-block formats below share one row loop (SuperRows) over B activation rows (row i
// at x + i * x_stride) against one weight row. Each format F gives its byte count, the offsets
// of its d (and dmin), block_sums<B>(w, x, x_stride, sumi) (every activation row's exact int32
// sums of the super-block) and, for formats with mins, mins(w) (one per 16 elements). Only
// the float steps, one per super-block and activation row, fix the bits, and those are the
// same for every B: one row (dot_of_rows) and batches (dot_rows_batch_of) agree.
template <class F>
struct SuperRows {
    template <int B>
    static void rows(int64_t n, const uint8_t* w, const uint8_t* x, uint64_t x_stride, float* out, int64_t out_stride) {
        __m256 acc[B], accm[B];
        for (int i = 0; i < B; ++i) acc[i] = accm[i] = _mm256_setzero_ps();
        for (int64_t s = 0; s < n / 256; ++s, w += F::kBytes, x += kQ8_K) {
            prefetch_span<F::kBytes>(w + tuning::kRowDotPrefetchBytes);
            if constexpr (F::kHasMin) {
                const __m256i mins = F::mins(w);
#pragma GCC unroll 8
                for (int i = 0; i < B; ++i) {
                    // min term: sum_j m_j * (the activation's bsum over m_j's 16 elements)
                    const uint8_t* xi = x + i * x_stride;
                    const __m256i msum = _mm256_madd_epi16(load256(xi + kQ8_KBsums), mins);
                    accm[i] =
                        _mm256_fmadd_ps(_mm256_set1_ps(f16_at(w + F::kDmin) * load_f32(xi)), _mm256_cvtepi32_ps(msum), accm[i]);
                }
            }
            __m256i sumi[B];
            F::template block_sums<B>(w, x, x_stride, sumi);
#pragma GCC unroll 8
            for (int i = 0; i < B; ++i) {
                const float d = f16_at(w + F::kD) * load_f32(x + i * x_stride);
                acc[i] = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi[i]), acc[i]);
            }
        }
        for (int i = 0; i < B; ++i) out[i * out_stride] = F::kHasMin ? hsum(acc[i]) - hsum(accm[i]) : hsum(acc[i]);
    }
};

// Q4_K/Q5_K: 32-element sub-blocks with one scale each (both 128-bit halves of a run get it);
// chunk C's 64 elements added to every activation row's sumi.
template <int C, bool Q5, int B>
inline void k4_chunk(const uint8_t* qs, __m256i qh, const uint8_t* x, uint64_t x_stride, __m256i scales, __m256i (&sumi)[B]) {
    const __m256i q = load256(qs + 32 * C);
    __m256i lo = _mm256_and_si256(q, low_nibbles());
    __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low_nibbles());
    if constexpr (Q5) {
        lo = _mm256_or_si256(lo, move_bit<2 * C, 4>(qh));
        hi = _mm256_or_si256(hi, move_bit<2 * C + 1, 4>(qh));
    }
    const __m256i lo_scales = _mm256_shuffle_epi8(scales, word_pair_shuffle(2 * C, 2 * C));
    const __m256i hi_scales = _mm256_shuffle_epi8(scales, word_pair_shuffle(2 * C + 1, 2 * C + 1));
#pragma GCC unroll 8
    for (int i = 0; i < B; ++i) {
        const uint8_t* qx = x + i * x_stride + kQ8_KQs + 64 * C;
        const __m256i p = _mm256_add_epi32(scaled_run_by(lo, qx, lo_scales), scaled_run_by(hi, qx + 32, hi_scales));
        sumi[i] = _mm256_add_epi32(sumi[i], p);
    }
}

template <bool Q5>
struct Q4_KOrQ5_KBlocks {
    static constexpr int64_t kBytes = Q5 ? kQ5_K : kQ4_K;
    static constexpr bool kHasMin = true;
    static constexpr int kD = 0, kDmin = 2;
    // Each 32-element min for both its 16s.
    static __m256i mins(const uint8_t* w) {
        const __m128i sm = k4_scales_mins(w + 4);
        return _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(sm, sm));
    }
    template <int B>
    static void block_sums(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
        constexpr int64_t kQs = Q5 ? 48 : 16;
        const __m128i sm = k4_scales_mins(w + 4);
        for (int i = 0; i < B; ++i) sumi[i] = _mm256_setzero_si256();
        const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        const __m256i qh = Q5 ? load256(w + 16) : _mm256_setzero_si256();
        k4_chunk<0, Q5>(w + kQs, qh, x, x_stride, scales, sumi);
        k4_chunk<1, Q5>(w + kQs, qh, x, x_stride, scales, sumi);
        k4_chunk<2, Q5>(w + kQs, qh, x, x_stride, scales, sumi);
        k4_chunk<3, Q5>(w + kQs, qh, x, x_stride, scales, sumi);
    }
};

// Q6_K: q = 6-bit value in 0..63, value = q - 32; the -32 goes through the bsums. Half h's
// 128 elements (four runs of 32) added to every activation row's sumi.
template <int B>
inline void q6k_half(const uint8_t* w, int h, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
    const __m256i m4 = low_nibbles();
    const __m256i m30 = _mm256_set1_epi8(0x30);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(load64(w + 192 + 8 * h)));
    const __m256i ql0 = load256(w + 64 * h);
    const __m256i ql1 = load256(w + 64 * h + 32);
    const __m256i qh = load256(w + 128 + 32 * h);
    const __m256i a0 = _mm256_or_si256(_mm256_and_si256(ql0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m30));
    const __m256i a1 = _mm256_or_si256(_mm256_and_si256(ql1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30));
    const __m256i a2 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), m4), _mm256_and_si256(qh, m30));
    const __m256i a3 =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30));
    add_four_scaled_runs(a0, a1, a2, a3, x + kQ8_KQs + 128 * h, x_stride, scales, sumi);
}

struct Q6_KBlocks {
    static constexpr int64_t kBytes = kQ6_K;
    static constexpr bool kHasMin = false;
    static constexpr int kD = 208, kDmin = 0;
    template <int B>
    static void block_sums(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
        const __m256i sc16 = _mm256_cvtepi8_epi16(load128(w + 192));
#pragma GCC unroll 8
        for (int i = 0; i < B; ++i) {
            const __m256i offset = _mm256_madd_epi16(load256(x + i * x_stride + kQ8_KBsums), sc16);
            sumi[i] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 5));
        }
        q6k_half(w, 0, x, x_stride, sumi);
        q6k_half(w, 1, x, x_stride, sumi);
    }
};

// Q3_K: q = 2 low bits + 4 * hmask bit in 0..7, value = q - 4; the -4 goes through the bsums.
template <int H, int K>
inline __m256i q3k_run(__m256i q, __m256i hm, const uint8_t* qx, __m256i scales) {
    const __m256i low = _mm256_and_si256(_mm256_srli_epi16(q, 2 * K), _mm256_set1_epi8(3));
    const __m256i u = _mm256_or_si256(low, move_bit<4 * H + K, 2>(hm));
    return scaled_run(u, qx + 32 * K, scales, word_pair_shuffle(2 * K, 2 * K + 1));
}

// Half H of a super-block (128 elements, four runs) added to every activation row's sumi.
template <int H, int B>
inline void q3k_half(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i hm, __m128i sc8, __m256i (&sumi)[B]) {
    const __m128i half_scales = H == 0 ? sc8 : _mm_unpackhi_epi64(sc8, sc8);
    const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepi8_epi16(half_scales));
    const __m256i q = load256(w + 32 + 32 * H);
#pragma GCC unroll 8
    for (int i = 0; i < B; ++i) {
        const uint8_t* qx = x + i * x_stride + kQ8_KQs + 128 * H;
        const __m256i s01 = _mm256_add_epi32(q3k_run<H, 0>(q, hm, qx, scales), q3k_run<H, 1>(q, hm, qx, scales));
        const __m256i s23 = _mm256_add_epi32(q3k_run<H, 2>(q, hm, qx, scales), q3k_run<H, 3>(q, hm, qx, scales));
        sumi[i] = _mm256_add_epi32(sumi[i], _mm256_add_epi32(s01, s23));
    }
}

struct Q3_KBlocks {
    static constexpr int64_t kBytes = kQ3_K;
    static constexpr bool kHasMin = false;
    static constexpr int kD = 108, kDmin = 0;
    template <int B>
    static void block_sums(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
        const __m128i sc8 = q3k_scales(w + 96);
        const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);
        const __m256i hm = load256(w);
#pragma GCC unroll 8
        for (int i = 0; i < B; ++i) {
            const __m256i offset = _mm256_madd_epi16(load256(x + i * x_stride + kQ8_KBsums), sc16);
            sumi[i] = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(offset, 2));
        }
        q3k_half<0>(w, x, x_stride, hm, sc8, sumi);
        q3k_half<1>(w, x, x_stride, hm, sc8, sumi);
    }
};

// Q2_K: q in 0..3 with a 4-bit scale and a 4-bit min per 16 elements.
struct Q2_KBlocks {
    static constexpr int64_t kBytes = kQ2_K;
    static constexpr bool kHasMin = true;
    static constexpr int kD = 80, kDmin = 82;
    static __m256i mins(const uint8_t* w) {
        return _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(load128(w), 4), _mm_set1_epi8(0x0F)));
    }
    template <int B>
    static void block_sums(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
        const __m256i m3 = _mm256_set1_epi8(3);
        const __m128i packed = load128(w);
        const __m128i scl = _mm_and_si128(packed, _mm_set1_epi8(0x0F));
        for (int i = 0; i < B; ++i) sumi[i] = _mm256_setzero_si256();
        for (int h = 0; h < 2; ++h) {
            const __m128i half_scales = h == 0 ? scl : _mm_unpackhi_epi64(scl, scl);
            const __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(half_scales));
            const __m256i q = load256(w + 16 + 32 * h);
            const __m256i q0 = _mm256_and_si256(q, m3), q1 = _mm256_and_si256(_mm256_srli_epi16(q, 2), m3);
            const __m256i q2 = _mm256_and_si256(_mm256_srli_epi16(q, 4), m3), q3 = _mm256_and_si256(_mm256_srli_epi16(q, 6), m3);
            add_four_scaled_runs(q0, q1, q2, q3, x + kQ8_KQs + 128 * h, x_stride, scales, sumi);
        }
    }
};

// IQ4_XS: eight 32-element groups with signed 6-bit scales. Each group's int16 pair sums are
// multiplied by its scale in the pair-sum step (_mm256_madd_epi16), so a super-block gives
// one exact int32 sum (|sum| <= 8 * 32 * 127 * 128 * 32 < 2^31) and one float update.
struct IQ4_XSBlocks {
    static constexpr int64_t kBytes = kIQ4_XS;
    static constexpr bool kHasMin = false;
    static constexpr int kD = 0, kDmin = 0;
    template <int B>
    static void block_sums(const uint8_t* w, const uint8_t* x, uint64_t x_stride, __m256i (&sumi)[B]) {
        const uint32_t scales_h = load_u16(w + 2);
        const uint32_t scales_l = load_u32(w + 4);
        for (int i = 0; i < B; ++i) sumi[i] = _mm256_setzero_si256();
        for (int g = 0; g < 8; ++g) {
            const int ls = static_cast<int>(((scales_l >> (4 * g)) & 0xF) | (((scales_h >> (2 * g)) & 3) << 4)) - 32;
            const __m256i group_scale = _mm256_set1_epi16(static_cast<short>(ls));
            const __m256i levels = iq4_levels_of(w + 8 + 16 * g);
#pragma GCC unroll 8
            for (int i = 0; i < B; ++i) {
                const __m256i qx = load256(x + i * x_stride + kQ8_KQs + 32 * g);
                const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(qx), levels_signed_as(levels, qx));
                sumi[i] = _mm256_add_epi32(sumi[i], _mm256_madd_epi16(p, group_scale));
            }
        }
    }
};

// ---------------------------------------------------------------- encoders

// The AVX2 steps of q8_encoders.h.
struct Avx2Encoding {
    // max |x| over `count` floats (a multiple of 8), as the bits of a float.
    static uint32_t absmax_bits(const float* x, int count) {
        const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
        __m256i m = _mm256_setzero_si256();
        for (int i = 0; i < count; i += 8) {
            m = _mm256_max_epu32(m, _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + i)), abs_mask));
        }
        return max_u32_lanes(m);
    }

    // Rounds x[0..31] * multiplier to int8 (nearest even, saturated), writes the 32 bytes and
    // returns their eight partial sums (int32).
    static __m256i quantize32(const float* x, float multiplier, uint8_t* q) {
        const __m256 m = _mm256_set1_ps(multiplier);
        const __m256i i0 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x), m));
        const __m256i i1 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 8), m));
        const __m256i i2 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 16), m));
        const __m256i i3 = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 24), m));
        const __m256i packed = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
        store256(q, _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
        return _mm256_add_epi32(_mm256_add_epi32(i0, i1), _mm256_add_epi32(i2, i3));
    }

    static int32_t total(__m256i v) { return sum_i32_lanes(v); }

    // The index of the first of x[0..255] whose magnitude has the float bits `bits`.
    static int first_of_magnitude(const float* x, uint32_t bits) {
        const __m256i target = _mm256_set1_epi32(static_cast<int>(bits));
        const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
        for (int i = 0; i < 256; i += 8) {
            const __m256i a = _mm256_and_si256(_mm256_castps_si256(_mm256_loadu_ps(x + i)), abs_mask);
            const int hits = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, target)));
            if (hits != 0) return i + __builtin_ctz(static_cast<unsigned>(hits));
        }
        return 0;
    }

    // Q8_K's bsums: the sums of each 16 quants.
    static void store_q8_k_bsums(uint8_t* dst) {
        for (int j = 0; j < 16; ++j) {
            const __m128i q = load128(dst + kQ8_KQs + 16 * j);
            // sum of 16 int8: bias to unsigned, sum absolute differences against 0
            const __m128i sad = _mm_sad_epu8(_mm_xor_si128(q, _mm_set1_epi8(static_cast<char>(0x80))), _mm_setzero_si128());
            const int sum = _mm_cvtsi128_si32(sad) + _mm_extract_epi16(sad, 4) - 16 * 128;
            store_u16(dst + kQ8_KBsums + 2 * j, static_cast<uint16_t>(static_cast<int16_t>(sum)));
        }
    }
};

void encode_f16(const float* x, uint8_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {  // NaN: the reference's canonical form
            for (int j = 0; j < 8; ++j) store_u16(dst + 2 * (i + j), fallback::fp32_to_fp16(x[i + j]));
            continue;
        }
        store128(dst + 2 * i, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) store_u16(dst + 2 * i, fallback::fp32_to_fp16(x[i]));
}

void encode_bf16(const float* x, uint8_t* dst, int64_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF);
    const __m256i inf = _mm256_set1_epi32(static_cast<int>(kInfBits));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
        const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
        const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
        const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
        const __m256i is_nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
        const __m256i r = _mm256_blendv_epi8(rounded, quiet_nan, is_nan);
        const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
        store128(dst + 2 * i, _mm256_castsi256_si128(packed));
    }
    for (; i < n; ++i) store_u16(dst + 2 * i, fallback::fp32_to_bf16(x[i]));
}

// ---------------------------------------------------------------- batches

// See RowsDotBatchFn. The activation rows' block scales (as floats) and prepared terms are
// computed once per call rather than once per weight row.
template <class Block, bool WithMin>
void dot_rows_batch_legacy(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x,
                           uint64_t x_row_bytes, int n_x, float* out, int64_t out_stride) {
    using Laid = LaidOut<Block, WithMin>;
    const int64_t nb = n / 32;
    // Per thread and reused from call to call: a batched step makes a few hundred calls.
    thread_local std::vector<float> scales;
    thread_local std::vector<uint8_t> prepared;
    scales.resize(static_cast<size_t>(n_x * nb * Laid::kScalesPerBlock));
    if constexpr (Block::kPrepared) prepared.resize(static_cast<size_t>(n_x * nb * 32));
    for (int i = 0; i < n_x; ++i) {
        for (int64_t b = 0; b < nb; ++b) {
            const uint8_t* xb = x + i * x_row_bytes + b * Block::kX;
            float* s = scales.data() + (i * nb + b) * Laid::kScalesPerBlock;
            s[0] = f16_at(xb);
            if constexpr (WithMin) s[1] = f16_at(xb + 2);
            if constexpr (Block::kPrepared) store256(prepared.data() + (i * nb + b) * 32, Block::prepare(xb));
        }
    }
    constexpr int kMax = WithMin ? tuning::kMaxBatchWithMin : tuning::kMaxBatch;
    batch_rows<kMax>(n_rows, n_x, [&](auto count, int64_t r, int i0) {
        const uint8_t* prepared_acts = nullptr;  // only the formats with prepared terms have them
        if constexpr (Block::kPrepared) prepared_acts = prepared.data() + i0 * nb * 32;
        const Laid acts{scales.data() + i0 * nb * Laid::kScalesPerBlock, prepared_acts, nb};
        legacy_rows_of<Block, WithMin, decltype(count)::value>(nb, w + r * row_bytes, x + i0 * x_row_bytes, x_row_bytes, acts,
                                                               out + i0 * out_stride + r, out_stride);
    });
}

// A batch of one: the activation's block scales converted once for all the rows.
template <class Block, bool WithMin>
void dot_rows_legacy(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x, float* out) {
    dot_rows_batch_legacy<Block, WithMin>(n, w, row_bytes, n_rows, x, 0, 1, out, 0);
}

// The table entries of the kernels with batches.
template <class Block, bool WithMin>
RowDotKernels legacy_kernels(GgmlType activation_type, EncodeRowFn encode) {
    return {activation_type, encode, &dot_legacy<Block, WithMin>, &dot_rows_legacy<Block, WithMin>,
            &dot_rows_batch_legacy<Block, WithMin>};
}
// F16/BF16 (HalfRows) two activation rows a pass: their eight accumulators and the weight's
// four vectors fill the sixteen registers.
template <class K>
RowDotKernels half_kernels(GgmlType type, EncodeRowFn encode) {
    constexpr RowDotFn dot = &dot_of_rows<K>;
    return {type, encode, dot, &dot_rows<dot>, &dot_rows_batch_of<K, tuning::kMaxBatchHalves>};
}
template <class F>
RowDotKernels super_kernels() {
    constexpr RowDotFn dot = &dot_of_rows<SuperRows<F>>;
    return {GgmlType::Q8_K, &encode_q8_k<Avx2Encoding>, dot, &dot_rows<dot>, &dot_rows_batch_of<SuperRows<F>, tuning::kMaxBatch>};
}

RowDotKernels ymm_row_dot_kernels(GgmlType weight_type) {
    switch (weight_type) {
        case GgmlType::F16: return half_kernels<F16Rows>(GgmlType::F16, &encode_f16);
        case GgmlType::BF16: return half_kernels<BF16Rows>(GgmlType::BF16, &encode_bf16);
        case GgmlType::Q8_0:
            return legacy_kernels<Q8_0Sum, false>(GgmlType::Q8_0, &encode_q8_0<Avx2Encoding>);
        case GgmlType::Q4_0:
            return legacy_kernels<Q4_0Sum, false>(GgmlType::Q8_0, &encode_q8_0<Avx2Encoding>);
        case GgmlType::Q5_0:
            return legacy_kernels<Q5_0Sum, false>(GgmlType::Q8_0, &encode_q8_0<Avx2Encoding>);
        case GgmlType::Q4_1:
            return legacy_kernels<Q4_1Sum, true>(GgmlType::Q8_1, &encode_q8_1<Avx2Encoding>);
        case GgmlType::Q5_1:
            return legacy_kernels<Q5_1Sum, true>(GgmlType::Q8_1, &encode_q8_1<Avx2Encoding>);
        case GgmlType::Q2_K: return super_kernels<Q2_KBlocks>();
        case GgmlType::Q3_K: return super_kernels<Q3_KBlocks>();
        case GgmlType::Q4_K:
            return super_kernels<Q4_KOrQ5_KBlocks<false>>();
        case GgmlType::Q5_K:
            return super_kernels<Q4_KOrQ5_KBlocks<true>>();
        case GgmlType::Q6_K:
            return super_kernels<Q6_KBlocks>();
        case GgmlType::IQ4_NL:
            return legacy_kernels<IQ4_NLSum, false>(GgmlType::Q8_0, &encode_q8_0<Avx2Encoding>);
        case GgmlType::IQ4_XS: return super_kernels<IQ4_XSBlocks>();
        default: return {};
    }
}

}  // namespace
}  // namespace inferscope::simd
