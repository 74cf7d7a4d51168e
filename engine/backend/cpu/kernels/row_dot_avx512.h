#pragma once
// The parts of the AVX-512 row dot family (row_dot.h) that its files share: the entry points
// of each file, the register helpers, the row loops (groups of rows, streams, the rows left)
// with their prefetch distances, and the batch loops. The kernels themselves are in
// row_dot_half_avx512.cpp (F16, BF16), row_dot_legacy_avx512.cpp (32-element blocks),
// row_dot_kquant_avx512.cpp (K-quants, IQ4_XS) and row_dot_encoders_avx512.cpp; the family's
// table, avx512_row_dot_kernels, in row_dot_avx512.cpp.
//
// Include it only from *_avx512.cpp files: the helpers are in an anonymous namespace, so each
// file compiles its own copy, and the entry points are defined only in AVX-512 files and
// reached only through avx512_row_dot_kernels, which the dispatcher calls after the run-time
// check (engine/CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/compile_time_count.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/row_dot_common.h"
#include "engine/backend/cpu/kernels/tuning_avx512.h"
#include "engine/formats/block_layouts.h"
#include "engine/formats/iq4_levels.h"

namespace inferscope::simd {

// The kernels of each file for the weight types it covers, with `encode` left null (an
// empty table for the others); avx512_row_dot_kernels adds the encoder.
RowDotKernels avx512_half_row_dots(GgmlType weight_type);
RowDotKernels avx512_legacy_row_dots(GgmlType weight_type, PrefetchLevel prefetch);
RowDotKernels avx512_kquant_row_dots(GgmlType weight_type, PrefetchLevel prefetch);
// The encoder of rows in `activation_type` (F16, BF16, Q8_0, Q8_1 or Q8_K).
EncodeRowFn avx512_row_encoder(GgmlType activation_type);

namespace {

// Block sizes and field offsets (kQ4_0, kQ8_KBsums, …).
using namespace block_layouts;
namespace tuning = avx512_tuning;

// ---------------------------------------------------------------- helpers

inline __m512i load512(const uint8_t* p) { return _mm512_loadu_si512(p); }

inline float hsum(__m512 v) {
    const __m512i bits = _mm512_castps_si512(v);
    const __m256 lo = _mm256_castsi256_ps(_mm512_castsi512_si256(bits));
    const __m256 hi = _mm256_castsi256_ps(_mm512_extracti64x4_epi64(bits, 1));
    return hsum(_mm256_add_ps(lo, hi));
}

inline __m512i low_nibbles() { return _mm512_set1_epi8(0x0F); }

inline __m512i dpbusd(__m512i acc, __m512i u, __m512i s) { return _mm512_dpbusd_epi32(acc, u, s); }

// 32 bytes at a and 32 bytes at b (a masked broadcast from memory costs no shuffle).
inline __m512i join32(const uint8_t* a, const uint8_t* b) {
    return _mm512_mask_broadcast_i64x4(_mm512_castsi256_si512(load256(a)), 0xF0, load256(b));
}

// The IQ4 levels plus 128, as unsigned bytes in every 128-bit lane: _mm512_shuffle_epi8 by
// nibble gives level + 128 in 1..241, the unsigned side of dpbusd; the 128 * sum(x) this
// adds is subtracted through prep's start value.
inline __m512i iq4_levels_u8() {
    const __m128i levels = load128(reinterpret_cast<const uint8_t*>(kIQ4NLValues));
    return _mm512_broadcast_i32x4(_mm_xor_si128(levels, _mm_set1_epi8(static_cast<char>(0x80))));
}

// ---------------------------------------------------------------- prefetching, row groups

// Each kernel step prefetches the cache lines of the weight bytes it reads its kAheadBytes
// ahead (tuning::kRowDotPrefetchBytes unless its format streams better at another
// distance); rows are contiguous, so a row's last steps prefetch the rows that follow it.

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
    int64_t near = tuning::kRowDotPrefetchBytes;  // offset from the current position ...
    int64_t spill_at = INT64_MAX;                 // ... while the step's offset in the row is below this,
    int64_t far = tuning::kRowDotPrefetchBytes;   // then this one (into the next group)

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
constexpr int kGroup = tuning::kRowGroup;

// A range whose eighths are at least tuning::kMinStreamBytes long is read as eight streams
// (dot_rows); a shorter one in groups of neighbouring rows. The short ranges are the passes
// of the batched path for formats without batch kernels (matmul.cpp: about 24 KiB of rows,
// run against each input row in turn) and the last pieces of a thread's share: there the
// neighbours' prefetches, two groups ahead, reach into the rows after the range, which
// eight short streams' do not, so neighbour groups read such ranges faster.

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
    if (stream_bytes < tuning::kMinStreamBytes) {
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

// Activation rows per pass of dot_rows_batch (tuning::kMaxBatch): their accumulators (2 or
// 3 per activation row for the quantized formats, 2 or 4 for the float ones) stay in
// registers beside a row's unpacked weights.
constexpr int kMaxBatch = tuning::kMaxBatch;

// The rows in memory order, each against B laid-out activation rows, each sum computed as in
// the group dot_rows puts its row in (K::row_batch gets that group's size; the float kernels'
// accumulators depend on it) and reduced as there: rows of whole groups of eight four at a
// time, the rows left after them one by one unless they are four. So every result has
// dot_rows' bits. One row is read at a time, so the weights are prefetched a single stream's
// distance ahead (across row ends: the rows are contiguous).
template <class K, int B>
void batch_over_rows(int64_t n, const uint8_t* w, uint64_t row_bytes, int64_t n_rows, const __m512i* x, int64_t x_regs,
                     float* out, int64_t out_stride) {
    const int64_t grouped = n_rows / kGroup * kGroup;
    const int left = static_cast<int>(n_rows - grouped);
    const int64_t ahead = PrefetchDistances::single().near;
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
    prefetch_lines<K::kLocality>(w, std::min<int64_t>(ahead, static_cast<int64_t>(row_bytes) * n_rows));
    for (int64_t r = 0; r < grouped; ++r) row(r, kGroup);
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

// The entries of a table for kernel type K: its dot, rows and batches (dot_rows_batch).
template <class K>
RowDotKernels rows_kernels(GgmlType activation_type) {
    return {activation_type, nullptr, &dot_row<K>, &dot_rows<K>, &dot_rows_batch<K>};
}

}  // namespace
}  // namespace inferscope::simd
