// avx512 row dot products and activation encoders. Compiled with avx512 flags (see
// engine/CMakeLists.txt): everything stays in an anonymous namespace.
//
// The family needs AVX512-VNNI on top of F/BW/VL (vpdpbusd, vpdpwssd); on a CPU without it
// (Skylake-X) the table provides nothing and the AVX2 kernels are used. The BF16
// instructions are not used: vdpbf16ps treats denormal inputs as zero, whereas the kernels
// here compute "products of the bf16 values (exact in float), summed in float".
//
// Semantics as in row_dot_avx2.cpp: encoders bit-identical to quantize_row (with the same
// scalar replicas for non-finite blocks), dot products with exact integer block sums and the
// reference's float steps, accumulated in vector lanes with fused multiply-adds.
//
// Integer products use vpdpbusd (unsigned x signed bytes, four products summed into int32
// without saturation) with the weight quant kept unsigned and the offset subtracted as
// offset*sum(x): Q8_0 weights are biased by 128 (w ^ 0x80 = w + 128), Q4_0 by 8, Q5_0 by 16.
// This is exact for every int8 activation, -128 included. K-quants multiply unsigned quants
// by activations with vpmaddubsw (pairs, far from int16 saturation) and apply the int16
// sub-block scales with vpdpwssd; offsets (Q3_K, Q6_K) and mins (Q2_K, Q4_K, Q5_K) go
// through the activation's bsums as in the reference.
//
// Register layouts: Q4_0/Q4_1 four blocks per 512-bit register (128-bit lane L = 16 quants
// of block L), eight blocks per iteration; Q8_0/Q5_0/Q5_1 two blocks per register, four per
// iteration; K-quants a 64-element run per register. Scales are computed four blocks at a
// time from the f16 fields and spread over the lanes with one permute.

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/compile_time_count.h"
#include "engine/backend/cpu/kernels/first_lanes.h"
#include "engine/backend/cpu/kernels/q8_encoders.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/row_dot_common.h"
#include "engine/backend/cpu/kernels/simd_encode_fallback.h"
#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

namespace inferscope::simd {
namespace {

// Block sizes and field offsets (kQ4_0, kQ8_KBsums, …).
using namespace block_layouts;

// ---------------------------------------------------------------- helpers

inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

inline float hsum(__m512 v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m256 lo = _mm256_castsi256_ps(_mm512_castsi512_si256(bits));
    const __m256 hi = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(bits, 1));
    return hsum(_mm256_add_ps(lo, hi));
}

// The low and the high 256 bits of a register from two places.
inline __m512i join(__m256i lo, __m256i hi) { return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1); }

inline __m512i low_nibbles() { return _mm512_set1_epi8(0x0F); }

// (a & 0x0F) | b, one instruction (vpternlogd truth table 0xEC for (A & C) | B).
inline __m512i nibble_or(__m512i a, __m512i b) { return _mm512_ternarylogic_epi32(a, b, low_nibbles(), 0xEC); }

// Word index vector for vpermw: word i -> first + (i >> shift).
alignas(64) constexpr uint16_t kIota16[32] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
                                               16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31};
inline __m512i word_groups(int first, int shift) {
    const __m512i iota = _mm512_load_si512(kIota16);
    return _mm512_add_epi16(_mm512_srli_epi16(iota, static_cast<unsigned>(shift)), _mm512_set1_epi16(static_cast<short>(first)));
}

// ---------------------------------------------------------------- prefetching, row groups

// Software prefetch distance of one stream of weights: the hardware prefetchers alone leave
// part of the bandwidth unused (see stream_read_avx512.cpp). Each kernel step prefetches the
// cache lines of the weight bytes it reads, this far ahead (a kernel's kAheadBytes: this,
// unless its format streams better at another distance); rows are contiguous, so a row's
// last steps prefetch the rows that follow it.
constexpr int64_t kAhead = 4096;

// Where a kernel's prefetches put the lines (its kLocality), as __builtin_prefetch's
// locality: GCC and clang emit prefetcht0 for 3 and prefetcht1 for 2 (clang has no _mm_hint
// type to template on).
constexpr int kIntoL1 = 3;
constexpr int kIntoL2 = 2;

template <int64_t Bytes, int Locality>
inline void prefetch_span(const uint8_t* p) {
    // Addresses at most 64 bytes apart over the step: every line of the stream is touched.
    for (int64_t o = 0; o < Bytes; o += 64) __builtin_prefetch(p + o, 0, Locality);
}

template <int Locality>
inline void prefetch_lines(const uint8_t* p, int64_t bytes) {
    for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(p + o, 0, Locality);
}

// Where the prefetches of R rows read in step (row r at w + r*row_bytes, all at the same
// offset; the next group of R rows follows) go: about `total` bytes ahead in all, so total/R
// bytes ahead in each row's own stream, whose continuation past the row's end is the same
// row of the next group; rows no longer than that are requested as many whole groups ahead
// as fit in total/R bytes of each row.
struct PrefetchDistances {
    int64_t near = kAhead;              // offset from the current position ...
    int64_t spill_at = INT64_MAX;       // ... while the step's offset in the row is below this,
    int64_t far = kAhead;               // then this one (into the next group)

    static PrefetchDistances single() { return {}; }
    // Rows that each continue in memory as their own stream (the next row of the stream
    // follows the row's end): total/R bytes ahead in each, never spilling.
    static PrefetchDistances streams(int rows, int64_t total) {
        PrefetchDistances a;
        a.near = a.far = total / (rows > 1 ? rows : 1);
        return a;
    }
    static PrefetchDistances group(uint64_t row_bytes, int rows, int64_t total) {
        PrefetchDistances a;
        if (rows <= 1) return a;
        const auto rb = static_cast<int64_t>(row_bytes);
        const int64_t each = total / rows;
        if (rb > each) {
            a.near = each;
            a.spill_at = rb - each;
            a.far = each + (rows - 1) * rb;
        } else {
            const int64_t groups = each / rb;
            a.near = a.far = groups * rows * rb;
        }
        return a;
    }
    int64_t at(int64_t offset) const { return offset < spill_at ? near : far; }
};

// The horizontal sums of four registers: [sum a, sum b, sum c, sum d].
inline __m256 fold(__m512 v) { return _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)); }
inline __m128 hsum4(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(fold(a), fold(b)), _mm256_hadd_ps(fold(c), fold(d)));
    return _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1));
}

// out[r * out_stride] = the sum of v[r]'s lanes.
template <int R>
inline void store_sums(float* out, int64_t out_stride, const __m512 (&v)[R]) {
    if constexpr (R % 4 == 0) {
#pragma GCC unroll 4
        for (int r = 0; r < R; r += 4) {
            const __m128 sums = hsum4(v[r], v[r + 1], v[r + 2], v[r + 3]);
            if (out_stride == 1) {
                _mm_storeu_ps(out + r, sums);
            } else {
                alignas(16) float lanes[4];
                _mm_store_ps(lanes, sums);
                for (int k = 0; k < 4; ++k) out[(r + k) * out_stride] = lanes[k];
            }
        }
    } else {
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) out[r * out_stride] = hsum(v[r]);
    }
}

// Rows in groups of kGroup (the activation's loads, unpacking and scales shared by the group),
// then the 1..kGroup-1 rows left. K::rows<R>(n, w, row_stride, x, out, out_stride, ahead)
// does R rows: row r at w + r * row_stride, its sum to out[r * out_stride].
// Eight rows rather than four: with every core streaming, a core's share of the bandwidth is
// bound by how many lines it has in flight, and eight rows are eight streams, each with its
// own prefetches.
constexpr int kGroup = 8;

// A range whose eighths are at least this long is read as eight streams (dot_rows); a
// shorter one in groups of neighbouring rows. The short ranges are the passes of the
// batched path for formats without batch kernels (matmul.cpp: about 24 KiB of rows, run
// against each input row in turn) and the last pieces of a thread's share: there the
// neighbours' prefetches, two groups ahead, reach into the rows after the range, which
// eight short streams' do not, so neighbour groups read such ranges faster.
constexpr uint64_t kMinStreamBytes = 8192;

// The rows [first, n_rows) after the whole groups, as one group of fewer rows.
template <class K>
void dot_rows_left(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t first, int64_t n_rows, const uint8_t* x,
                   float* out) {
    const int64_t left = n_rows - first;
    if (left <= 0) return;
    const uint8_t* wr = w + static_cast<uint64_t>(first) * row_bytes;
    const PrefetchDistances ahead = PrefetchDistances::group(row_bytes, static_cast<int>(left), K::kAheadBytes);
    with_compile_time_count<kGroup - 1>(static_cast<int>(left), [&](auto rows) {
        K::template rows<decltype(rows)::value>(n, wr, row_bytes, x, out + first, 1, ahead);
    });
}

// Groups of eight neighbouring rows.
template <class K>
void dot_rows_in_neighbour_groups(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x,
                                  float* out) {
    int64_t r = 0;
    if (n_rows >= kGroup) {
        const PrefetchDistances ahead = PrefetchDistances::group(row_bytes, kGroup, K::kAheadBytes);
        // The steps prefetch from `near` bytes ahead on: start the lines before that now.
        if (ahead.spill_at == INT64_MAX) {
            prefetch_lines<K::kLocality>(w, std::min<int64_t>(ahead.near, static_cast<int64_t>(row_bytes) * n_rows));
        } else {
            for (int g = 0; g < kGroup; ++g) prefetch_lines<K::kLocality>(w + g * row_bytes, ahead.near);
        }
        for (; r + kGroup <= n_rows; r += kGroup) {
            K::template rows<kGroup>(n, w + static_cast<uint64_t>(r) * row_bytes, row_bytes, x, out + r, 1, ahead);
        }
    }
    dot_rows_left<K>(n, w, row_bytes, r, n_rows, x, out);
}

// A long range is read as eight streams: the group's rows are taken one from each eighth of
// the range (rows j, j + s, j + 2s, ... with s = n_rows / 8), so that each stream reads its
// eighth front to back, across row ends, where neighbouring rows would make every stream
// jump eight rows ahead at each row end. Rows of 896 columns are 504 (Q4_0) or 952 (Q8_0)
// bytes, so with neighbours a stream would run for one row only, too short for the
// prefetchers to reach full bandwidth. Each row's sum is computed as in a group of
// neighbours (the same rows end up in the last, smaller group), so the results are the same
// bits.
template <class K>
void dot_rows(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x, float* out) {
    const int64_t per_stream = n_rows / kGroup;
    const uint64_t stream_bytes = static_cast<uint64_t>(per_stream) * row_bytes;
    if (stream_bytes < kMinStreamBytes) {
        dot_rows_in_neighbour_groups<K>(n, w, row_bytes, n_rows, x, out);
        return;
    }
    const PrefetchDistances ahead = PrefetchDistances::streams(kGroup, K::kAheadBytes);
    // The steps prefetch from `near` bytes ahead on: start each stream's lines before that now.
    for (int g = 0; g < kGroup; ++g) prefetch_lines<K::kLocality>(w + g * stream_bytes, ahead.near);
    for (int64_t j = 0; j < per_stream; ++j) {
        K::template rows<kGroup>(n, w + static_cast<uint64_t>(j) * row_bytes, stream_bytes, x, out + j, per_stream, ahead);
    }
    dot_rows_left<K>(n, w, row_bytes, per_stream * kGroup, n_rows, x, out);
}

template <class K>
float dot_row(int64_t n, const uint8_t* w, const uint8_t* x) {
    float out[1];
    K::template rows<1>(n, w, 0, x, out, 1, PrefetchDistances::single());
    return out[0];
}

// ---------------------------------------------------------------- batches

// Activation rows per pass of dot_rows_batch: their accumulators (2 or 3 per activation row
// for the quantized formats, 2 or 4 for the float ones) stay in registers beside a row's
// unpacked weights.
constexpr int kMaxBatch = 4;

// The rows in dot_rows' order of streams, each against B laid-out activation rows, each sum
// computed as in the group dot_rows puts its row in (K::row_batch gets that group's size;
// the float kernels' accumulators depend on it) and reduced as there: rows of whole groups
// of eight four at a time, the rows left after them one by one unless they are four. So
// every result has dot_rows' bits.
template <class K, int B>
void batch_over_rows(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const __m512i* x, int64_t x_regs,
                     float* out, int64_t out_stride) {
    const int64_t per_stream = n_rows / kGroup;
    const int64_t grouped = per_stream * kGroup;
    const int left = static_cast<int>(n_rows - grouped);
    const int64_t ahead = PrefetchDistances::streams(kGroup, K::kAheadBytes).near;  // as dot_rows' streams
    const auto row = [&](int64_t r, int group_rows) {
        __m512 total[B];
        float tail_min[B];
        K::template row_batch<B>(n, w + static_cast<uint64_t>(r) * row_bytes, x, x_regs, ahead, group_rows, total, tail_min);
        alignas(16) float sums[4];
        if (group_rows % 4 == 0) {
            __m512 t[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
            for (int i = 0; i < B; ++i) t[i] = total[i];
            _mm_store_ps(sums, hsum4(t[0], t[1], t[2], t[3]));
        } else {
            for (int i = 0; i < B; ++i) sums[i] = hsum(total[i]);
        }
        for (int i = 0; i < B; ++i) {
            float& o = out[i * out_stride + r];
            o = sums[i];
            if constexpr (K::kTailMin) o += tail_min[i];
        }
    };
    for (int g = 0; g < kGroup && per_stream > 0; ++g) {
        prefetch_lines<K::kLocality>(w + static_cast<uint64_t>(g * per_stream) * row_bytes, ahead);
    }
    for (int64_t j = 0; j < per_stream; ++j) {
        for (int g = 0; g < kGroup; ++g) row(j + g * per_stream, kGroup);
    }
    for (int64_t r = grouped; r < n_rows; ++r) row(r, left);
}

// See RowsDotBatchFn: the activation rows kMaxBatch at a time, each laid out once per call.
template <class K>
void dot_rows_batch(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const uint8_t* x, uint64_t x_row_bytes,
                    int n_x, float* out, int64_t out_stride) {
    // Per thread and reused from call to call: a batched step makes a few hundred calls.
    thread_local std::vector<__m512i> layouts;
    const int64_t regs = K::layout_regs(n);
    for (int i0 = 0; i0 < n_x; i0 += kMaxBatch) {
        const int count = std::min(kMaxBatch, n_x - i0);
        layouts.resize(static_cast<size_t>(regs) * static_cast<size_t>(count));
        for (int i = 0; i < count; ++i) K::lay_out(n, x + static_cast<uint64_t>(i0 + i) * x_row_bytes, layouts.data() + i * regs);
        with_compile_time_count<kMaxBatch>(count, [&](auto b) {
            batch_over_rows<K, decltype(b)::value>(n, w, row_bytes, n_rows, layouts.data(), regs, out + i0 * out_stride, out_stride);
        });
    }
}

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

// Four blocks' d (Per 1) or [d, m] pairs (Per 2) as floats.
template <int64_t Stride>
inline __m128 d4(const uint8_t* p) {
    return _mm_cvtph_ps(_mm512_castsi512_si128(BlockWords<Stride, 4, 1>::words(p)));
}
template <int64_t Stride>
inline __m256 dm4(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm512_castsi512_si128(BlockWords<Stride, 4, 2>::words(p)));
}
template <int64_t Stride>
inline __m256 d8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm512_castsi512_si128(BlockWords<Stride, 8, 1>::words(p)));
}
template <int64_t Stride>
inline __m512 dm8(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm512_castsi512_si256(BlockWords<Stride, 8, 2>::words(p)));
}

// ---------------------------------------------------------------- F16 / BF16

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
    static constexpr int64_t kAheadBytes = kAhead;
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

// ---------------------------------------------------------------- legacy 32-element blocks

inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }

// 32 bytes at a and 32 bytes at b (a masked broadcast from memory costs no shuffle).
inline __m512i join32(const uint8_t* a, const uint8_t* b) {
    return _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(load256(a)), 0xF0, load256(b));
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
    // Q8_0 rows of 896 columns are 952 bytes: 4096 in all would put each row's prefetches
    // only 512 bytes ahead, too close to hide the latency; 16384 requests them two groups ahead.
    static constexpr int64_t kAheadBytes = kW == kQ8_0 ? 16384 : kAhead;
    static constexpr int kLocality = kIntoL1;  // L1 even on Intel cores: L2 slows Q8_0 decode
    // sum(q * x) + init over blocks a and b.
    static __m512i sum(const uint8_t* wa, const uint8_t* wb, __m512i init, __m512i qx) {
        return dpbusd(init, Pair::quants(wa, wb), qx);
    }
    // The scales of four blocks: the activation's from xb, a weight row's from wb, and their
    // products (block k's in lane k; [d, m] pairs in lanes 2k, 2k+1 for kMin).
    static __m256 x_scales4(const uint8_t* xb) {
        if constexpr (Pair::kMin) {
            return dm4<kX>(xb);
        } else {
            return _mm256_castps128_ps256(d4<kX>(xb));
        }
    }
    static __m256 w_scales4(const uint8_t* wb) {
        if constexpr (Pair::kMin) {
            return dm4<kW>(wb);
        } else {
            return _mm256_castps128_ps256(d4<kW>(wb));
        }
    }
    static __m256 products4(__m256 ws, __m256 dx) {
        if constexpr (Pair::kMin) {
            return _mm256_mul_ps(ws, dx);
        } else {
            return _mm256_castps128_ps256(_mm_mul_ps(_mm256_castps256_ps128(ws), _mm256_castps256_ps128(dx)));
        }
    }
    // acc0 + acc1, with the odd lanes of accm (the m_w * s_x terms) for kMin.
    static __m512 total_of(__m512 acc0, __m512 acc1, __m256 accm) {
        const __m512 total = _mm512_add_ps(acc0, acc1);
        if constexpr (Pair::kMin) {
            const __m256 odd = _mm256_castsi256_ps(_mm256_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1));
            return _mm512_add_ps(total, _mm512_zextps256_ps512(_mm256_and_ps(accm, odd)));
        }
        return total;
    }
    // Block k's scale in the 256-bit half k % 2 (blocks 0, 1 by spread(0), 2, 3 by
    // spread(1); lanes of [d, m] pairs: 2k).
    static __m512i spread(int half) {
        if (half == 0) {
            return Pair::kMin ? _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2)
                              : _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        }
        return Pair::kMin ? _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 6, 6, 6, 6, 6, 6, 6, 6)
                          : _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
    }
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
                const __m256 p = products4(w_scales4(wb), dx);
                if constexpr (Pair::kMin) accm[r] = _mm256_add_ps(accm[r], p);
                const __m512 p512 = _mm512_castps256_ps512(p);
                acc0[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread01, p512), _mm512_cvtepi32_ps(s01), acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread23, p512), _mm512_cvtepi32_ps(s23), acc1[r]);
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
                const __m512 d = _mm512_maskz_mov_ps(0x00FF, _mm512_set1_ps(f16_at(wb) * f16_at(xb)));
                acc0[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum(wb, wb, init, qx)), acc0[r]);
                if constexpr (Pair::kMin) tail_min[r] += f16_at(wb + 2) * f16_at(xb + 2);
            }
        }
        __m512 total[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) total[r] = total_of(acc0[r], acc1[r], accm[r]);
        store_sums<R>(out, out_stride, total);
        if constexpr (Pair::kMin) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) out[r * out_stride] += tail_min[r];
        }
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
            const float m = Pair::kMin ? f16_at(xb + 2) : 0.0f;
            v[2] = _mm512_castps_si512(_mm512_setr_ps(f16_at(xb), m, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
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
                if constexpr (Pair::kMin) accm[i] = _mm256_add_ps(accm[i], p);
                const __m512 p512 = _mm512_castps256_ps512(p);
                acc0[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread01, p512), _mm512_cvtepi32_ps(s01), acc0[i]);
                acc1[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread23, p512), _mm512_cvtepi32_ps(s23), acc1[i]);
            }
        }
        for (; b < nb; ++b, at += 3) {
            const uint8_t* wb = w + b * kW;
            const __m512i q = Pair::quants(wb, wb);
            const float dw = f16_at(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                alignas(64) float dm[16];
                _mm512_store_si512(dm, v[2]);
                const __m512 d = _mm512_maskz_mov_ps(0x00FF, _mm512_set1_ps(dw * dm[0]));
                acc0[i] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(dpbusd(v[1], q, v[0])), acc0[i]);
                if constexpr (Pair::kMin) tail_min[i] += f16_at(wb + 2) * dm[1];
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of(acc0[i], acc1[i], accm[i]);
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

// The IQ4 levels plus 128, as unsigned bytes in every 128-bit lane: _mm512_shuffle_epi8 by
// nibble gives level + 128 in 1..241, the unsigned side of dpbusd; the 128 * sum(x) this
// adds is subtracted through prep's start value.
inline __m512i iq4_levels_u8() {
    const __m128i levels = load128(reinterpret_cast<const uint8_t*>(kIQ4NLValues));
    return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

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
    // 1 KiB ahead in each row of the FFN down product (2736 bytes), and still two groups
    // ahead for rows of 896 columns: the longer distance hides more of the latency.
    static constexpr int64_t kAheadBytes = 8192;
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
        if constexpr (Quad::kMin) {
            return _mm512_insertf32x8(_mm512_castps256_ps512(dm4<kX>(xb)), dm4<kX>(xb + 4 * kX), 1);
        } else {
            return _mm512_castps256_ps512(_mm256_insertf128_ps(_mm256_castps128_ps256(d4<kX>(xb)), d4<kX>(xb + 4 * kX), 1));
        }
    }
    static __m512 x_scales4(const uint8_t* xb) {
        if constexpr (Quad::kMin) {
            return _mm512_castps256_ps512(dm4<kX>(xb));
        } else {
            return _mm512_castps128_ps512(d4<kX>(xb));
        }
    }
    static __m512 w_scales8(const uint8_t* wb) {
        if constexpr (Quad::kMin) {
            return dm8<kW>(wb);
        } else {
            return _mm512_castps256_ps512(d8<kW>(wb));
        }
    }
    static __m512 w_scales4(const uint8_t* wb) {
        if constexpr (Quad::kMin) {
            return _mm512_castps256_ps512(dm4<kW>(wb));
        } else {
            return _mm512_castps128_ps512(d4<kW>(wb));
        }
    }
    static __m512 products8(__m512 ws, __m512 dx) {
        if constexpr (Quad::kMin) {
            return _mm512_mul_ps(ws, dx);
        } else {
            return _mm512_castps256_ps512(_mm256_mul_ps(_mm512_castps512_ps256(ws), _mm512_castps512_ps256(dx)));
        }
    }
    static __m512 products4(__m512 ws, __m512 dx) {
        if constexpr (Quad::kMin) {
            return _mm512_castps256_ps512(_mm256_mul_ps(_mm512_castps512_ps256(ws), _mm512_castps512_ps256(dx)));
        } else {
            return _mm512_castps128_ps512(_mm_mul_ps(_mm512_castps512_ps128(ws), _mm512_castps512_ps128(dx)));
        }
    }
    // acc0 + acc1, with the odd lanes of accm (the m_w * s_x terms) for kMin.
    static __m512 total_of(__m512 acc0, __m512 acc1, __m512 accm) {
        const __m512 total = _mm512_add_ps(acc0, acc1);
        if constexpr (Quad::kMin) {
            const __m512 odd = _mm512_castsi512_ps(_mm512_setr_epi32(0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1, 0, -1));
            return _mm512_add_ps(total, _mm512_and_ps(accm, odd));
        }
        return total;
    }
    // Block k's scale in lanes 4k..4k+3 (blocks 0..3 by spread(0), 4..7 by spread(1));
    // [d, m] pairs: lane 2k.
    static __m512i spread(int half) {
        if (half == 0) {
            return Quad::kMin ? _mm512_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2, 4, 4, 4, 4, 6, 6, 6, 6)
                              : _mm512_setr_epi32(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3);
        }
        return Quad::kMin ? _mm512_setr_epi32(8, 8, 8, 8, 10, 10, 10, 10, 12, 12, 12, 12, 14, 14, 14, 14)
                          : _mm512_setr_epi32(4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7);
    }
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
                const __m512 p = products8(w_scales8(wb), dx);
                if constexpr (Quad::kMin) accm[r] = _mm512_add_ps(accm[r], p);
                acc0[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread0, p), _mm512_cvtepi32_ps(s0), acc0[r]);
                acc1[r] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread1, p), _mm512_cvtepi32_ps(s1), acc1[r]);
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
                const __m512 d = _mm512_maskz_mov_ps(0x000F, _mm512_set1_ps(f16_at(wb) * f16_at(xb)));
                acc1[r] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(sum<0>(wb, init, xlo, xhi)), acc1[r]);
                if constexpr (Quad::kMin) tail_min[r] += f16_at(wb + 2) * f16_at(xb + 2);
            }
        }
        __m512 total[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) total[r] = total_of(acc0[r], acc1[r], accm[r]);
        store_sums<R>(out, out_stride, total);
        if constexpr (Quad::kMin) {
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) out[r * out_stride] += tail_min[r];
        }
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
            const float m = Quad::kMin ? f16_at(xb + 2) : 0.0f;
            v[3] = _mm512_castps_si512(_mm512_setr_ps(f16_at(xb), m, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0));
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
                if constexpr (Quad::kMin) accm[i] = _mm512_add_ps(accm[i], p);
                acc0[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread0, p), _mm512_cvtepi32_ps(s0), acc0[i]);
                acc1[i] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread1, p), _mm512_cvtepi32_ps(s1), acc1[i]);
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
            const float dw = f16_at(wb);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) {
                const __m512i* v = x + i * x_regs + at;
                alignas(64) float dm[16];
                _mm512_store_si512(dm, v[3]);
                const __m512 d = _mm512_maskz_mov_ps(0x000F, _mm512_set1_ps(dw * dm[0]));
                acc1[i] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(nibble_dots(v[2], lo, hi, v[0], v[1])), acc1[i]);
                if constexpr (Quad::kMin) tail_min[i] += f16_at(wb + 2) * dm[1];
            }
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of(acc0[i], acc1[i], accm[i]);
    }
};

// ---------------------------------------------------------------- K-quants (x Q8_K)
// One 256-element superblock per step; a Body type computes one row's superblock against the
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
struct Q4_KOrQ5_KBody {
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
    static W unpack(const uint8_t* w) {
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
    static void dot(const W& u, const X& x, __m512& acc, __m256& accm) {
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
inline void offset_dot(const OffsetKQuantWeights& u, const Q8_KBytes& xd, __m512& acc) {
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

struct Q6_KBody : DirectActivation {
    static constexpr int64_t kW = kQ6_K;
    static constexpr bool kMin = false;
    using W = OffsetKQuantWeights;
    static W unpack(const uint8_t* w) {
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
    static void dot(const W& u, const X& x, __m512& acc, __m256&) { offset_dot<5>(u, x, acc); }
};

struct Q3_KBody : DirectActivation {
    static constexpr int64_t kW = kQ3_K;
    static constexpr bool kMin = false;
    using W = OffsetKQuantWeights;
    static W unpack(const uint8_t* w) {
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
    static void dot(const W& u, const X& x, __m512& acc, __m256&) { offset_dot<2>(u, x, acc); }
};

struct Q2_KBody : DirectActivation {
    static constexpr int64_t kW = kQ2_K;
    static constexpr bool kMin = true;
    struct W {
        __m512i q[2][2];
        __m512i scales[2][2];
        __m256i mins;
        float d, dmin;
    };
    static W unpack(const uint8_t* w) {
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
    static void dot(const W& u, const X& xd, __m512& acc, __m256& accm) {
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

template <class Body>
struct KRows {
    static constexpr int64_t kAheadBytes = kAhead;
    static constexpr int kLocality = kIntoL1;
    template <int R>
    static void rows(int64_t n, const uint8_t* w, uint64_t rb, const uint8_t* x, float* out, int64_t out_stride,
                     const PrefetchDistances& ahead) {
        constexpr int64_t kW = Body::kW;
        const int64_t nb = n / 256;
        __m512 acc[R];
        __m256 accm[R];
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) {
            acc[r] = _mm512_setzero_ps();
            accm[r] = _mm256_setzero_ps();
        }
        for (int64_t i = 0; i < nb; ++i) {
            const auto xp = Body::prep(x + i * kQ8_K);
            const int64_t pf = ahead.at(i * kW);
#pragma GCC unroll 8
            for (int r = 0; r < R; ++r) {
                const uint8_t* wi = w + r * rb + i * kW;
                prefetch_span<kW, kLocality>(wi + pf);
                Body::dot(Body::unpack(wi), xp, acc[r], accm[r]);
            }
        }
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) acc[r] = total_of(acc[r], accm[r]);
        store_sums<R>(out, out_stride, acc);
    }
    // A row's sum before the reduction: acc, less the mins term for the bodies that have one.
    static __m512 total_of(__m512 acc, __m256 accm) {
        if constexpr (Body::kMin) return _mm512_sub_ps(acc, _mm512_zextps256_ps512(accm));
        return acc;
    }

    // ---- batches (dot_rows_batch): each weight superblock unpacked once for up to kMaxBatch
    // activation rows, laid out kKLayoutRegs registers per superblock.
    static constexpr bool kTailMin = false;
    static int64_t layout_regs(int64_t n) { return n / 256 * kKLayoutRegs; }
    static void lay_out(int64_t n, const uint8_t* x, __m512i* v) {
        for (int64_t i = 0; i < n / 256; ++i) Body::lay_out(x + i * kQ8_K, v + i * kKLayoutRegs);
    }
    template <int B>
    static void row_batch(int64_t n, const uint8_t* w, const __m512i* x, int64_t x_regs, int64_t pf, int /*group_rows*/,
                          __m512 (&total)[B], float (&/*tail_min*/)[B]) {
        constexpr int64_t kW = Body::kW;
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
            const typename Body::W u = Body::unpack(ws);
#pragma GCC unroll 4
            for (int i = 0; i < B; ++i) Body::dot(u, Body::view(x + i * x_regs + s * kKLayoutRegs), acc[i], accm[i]);
        }
#pragma GCC unroll 4
        for (int i = 0; i < B; ++i) total[i] = total_of(acc[i], accm[i]);
    }
};

// ---------------------------------------------------------------- encoders

// The AVX-512 steps of q8_encoders.h.
struct Avx512Encoding {
    // max |x| over `count` floats (a multiple of 16), as the bits of a float.
    static uint32_t absmax_bits(const float* x, int count) {
        const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
        __m512i m = _mm512_setzero_si512();
        for (int i = 0; i < count; i += 16) {
            m = _mm512_max_epu32(m, _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), abs_mask));
        }
        const __m512i f = _mm512_max_epu32(m, _mm512_shuffle_i32x4(m, m, 0x4E));
        __m128i s = _mm_max_epu32(_mm512_castsi512_si128(f), _mm256_extracti128_si256(_mm512_castsi512_si256(f), 1));
        s = _mm_max_epu32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_max_epu32(s, _mm_shuffle_epi32(s, 1));
        return static_cast<uint32_t>(_mm_cvtsi128_si32(s));
    }

    // x[0..31] * multiplier rounded to nearest even and saturated to int8 (32 bytes at q);
    // returns the int32 values (their sum is the block's sum when nothing saturated).
    static __m512i quantize32(const float* x, float multiplier, uint8_t* q) {
        const __m512 m = _mm512_set1_ps(multiplier);
        const __m512i i0 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x), m));
        const __m512i i1 = _mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 16), m));
        store128(q, _mm512_cvtsepi32_epi8(i0));
        store128(q + 16, _mm512_cvtsepi32_epi8(i1));
        return _mm512_add_epi32(i0, i1);
    }

    static int32_t total(__m512i v) {
        const __m512i f = _mm512_add_epi32(v, _mm512_shuffle_i32x4(v, v, 0x4E));
        __m128i s = _mm_add_epi32(_mm512_castsi512_si128(f), _mm256_extracti128_si256(_mm512_castsi512_si256(f), 1));
        s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
        s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 1));
        return _mm_cvtsi128_si32(s);
    }

    // The index of the first of x[0..255] whose magnitude has the float bits `bits`.
    static int first_of_magnitude(const float* x, uint32_t bits) {
        const __m512i target = _mm512_set1_epi32(static_cast<int>(bits));
        const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
        for (int i = 0; i < 256; i += 16) {
            const __m512i a = _mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + i)), abs_mask);
            const unsigned hits = _mm512_cmpeq_epi32_mask(a, target);
            if (hits != 0) return i + __builtin_ctz(hits);
        }
        return 0;
    }

    // Q8_K's bsums: the sum of each 16 quants (bias to unsigned, sum of absolute differences
    // to 0).
    static void store_q8_k_bsums(uint8_t* dst) {
        const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
        for (int c = 0; c < 4; ++c) {
            const __m512i sad = _mm512_sad_epu8(_mm512_xor_si512(load512(dst + kQ8_KQs + 64 * c), bias), _mm512_setzero_si512());
            const __m512i pairs = _mm512_add_epi64(sad, _mm512_bsrli_epi128(sad, 8));  // qword 0 of each lane: 16 quants
            const __m128i sums = _mm512_cvtepi64_epi16(pairs);                        // words 0, 2, 4, 6
            alignas(16) uint16_t words[8];
            _mm_store_si128(reinterpret_cast<__m128i*>(words), sums);
            for (int j = 0; j < 4; ++j) {
                const auto s = static_cast<int16_t>(static_cast<int>(words[2 * j]) - 16 * 128);
                store_u16(dst + kQ8_KBsums + 2 * (4 * c + j), static_cast<uint16_t>(s));
            }
        }
    }
};

void encode_f16(const float* x, uint8_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        if (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) != 0) {  // NaN: the reference's canonical form
            for (int64_t j = i; j < std::min<int64_t>(n, i + 16); ++j) {
                store_u16(dst + 2 * j, fallback::fp32_to_fp16(x[j]));
            }
            continue;
        }
        _mm256_mask_storeu_epi16(dst + 2 * i, m, _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
    }
}

void encode_bf16(const float* x, uint8_t* dst, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF);
    const __m512i inf = _mm512_set1_epi32(static_cast<int>(kInfBits));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = first_lanes(n - i);
        const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, x + i));
        const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
        const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
        const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
        const __mmask16 is_nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs_mask), inf);
        const __m512i r = _mm512_mask_mov_epi32(rounded, is_nan, quiet_nan);
        _mm256_mask_storeu_epi16(dst + 2 * i, m, _mm512_cvtepi32_epi16(r));
    }
}

// ---------------------------------------------------------------- IQ4_XS (x Q8_K)

// Eight 32-element groups per super-block, each with a signed 6-bit scale; the nibbles look
// up the levels + 128 (iq4_levels_u8) and the activation's 128 * sum(x) comes off through
// the start value, so each int32 lane holds an exact part of sum(level * x) of one group.
// Two groups per register; their lanes are converted to float and multiplied by the groups'
// scales (exact: |lane| <= 4 * 127 * 128 < 2^16, |scale| <= 32), the four registers added in
// float, and the block's sum added times d_w * d_x.
// Locality: where the weights are prefetched (active_prefetch_level), as for QuadRows.
template <int Locality>
struct IQ4_XSRows {
    static constexpr int64_t kW = kIQ4_XS, kX = kQ8_K;
    static constexpr int64_t kAheadBytes = 8192;
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

RowDotKernels avx512_row_dot_kernels(GgmlType weight_type, PrefetchLevel prefetch) {
    if (!cpu_features().avx512vnni) return {};  // this family is AVX-512 F/BW/VL + VNNI
    const bool to_l2 = prefetch == PrefetchLevel::L2;
    using Q4_0RowsL1 = QuadRows<Q4_0Quad, kIntoL1>;
    using Q4_0RowsL2 = QuadRows<Q4_0Quad, kIntoL2>;
    using Q4_1RowsL1 = QuadRows<Q4_1Quad, kIntoL1>;
    using Q4_1RowsL2 = QuadRows<Q4_1Quad, kIntoL2>;
    using IQ4_NLRowsL1 = QuadRows<IQ4_NLQuad, kIntoL1>;
    using IQ4_NLRowsL2 = QuadRows<IQ4_NLQuad, kIntoL2>;
    using IQ4_XSRowsL1 = IQ4_XSRows<kIntoL1>;
    using IQ4_XSRowsL2 = IQ4_XSRows<kIntoL2>;
    switch (weight_type) {
#define INFERSCOPE_BATCH_ROWS(K) &dot_row<K>, &dot_rows<K>, &dot_rows_batch<K>
        case GgmlType::F16: return {GgmlType::F16, &encode_f16, INFERSCOPE_BATCH_ROWS(HalvesRows<false>)};
        case GgmlType::BF16: return {GgmlType::BF16, &encode_bf16, INFERSCOPE_BATCH_ROWS(HalvesRows<true>)};
        case GgmlType::Q8_0: return {GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(PairRows<Q8_0Pair>)};
        case GgmlType::Q4_0:
            return to_l2 ? RowDotKernels{GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(Q4_0RowsL2)}
                         : RowDotKernels{GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(Q4_0RowsL1)};
        case GgmlType::Q5_0: return {GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(PairRows<Q5_0Pair>)};
        case GgmlType::Q4_1:
            return to_l2 ? RowDotKernels{GgmlType::Q8_1, &encode_q8_1<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(Q4_1RowsL2)}
                         : RowDotKernels{GgmlType::Q8_1, &encode_q8_1<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(Q4_1RowsL1)};
        case GgmlType::Q5_1: return {GgmlType::Q8_1, &encode_q8_1<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(PairRows<Q5_1Pair>)};
        case GgmlType::Q2_K: return {GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(KRows<Q2_KBody>)};
        case GgmlType::Q3_K: return {GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(KRows<Q3_KBody>)};
        case GgmlType::Q4_K: return {GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(KRows<Q4_KOrQ5_KBody<false>>)};
        case GgmlType::Q5_K: return {GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(KRows<Q4_KOrQ5_KBody<true>>)};
        case GgmlType::Q6_K: return {GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(KRows<Q6_KBody>)};
        case GgmlType::IQ4_NL:
            return to_l2 ? RowDotKernels{GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(IQ4_NLRowsL2)}
                         : RowDotKernels{GgmlType::Q8_0, &encode_q8_0<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(IQ4_NLRowsL1)};
        case GgmlType::IQ4_XS:
            return to_l2 ? RowDotKernels{GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(IQ4_XSRowsL2)}
                         : RowDotKernels{GgmlType::Q8_K, &encode_q8_k<Avx512Encoding>, INFERSCOPE_BATCH_ROWS(IQ4_XSRowsL1)};
#undef INFERSCOPE_BATCH_ROWS
        default: return {};
    }
}

}  // namespace inferscope::simd
