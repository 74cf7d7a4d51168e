#pragma once
// The instruction-set-neutral part of the tiled GEMM kernels (tile_gemm.h): the loops over
// panels of weight rows, k chunks and tiles of activation rows, the weight and activation
// prefetches between them, and the dispatch to a kind's micro-kernel of the tile's size.
// Written once for tile_gemm_ymm.h and tile_gemm_avx512.cpp, each of which compiles it
// with its own flags.
//
// Include it only from *_avx2.cpp / *_avx512.cpp files: everything is in an anonymous
// namespace, so each file gets its own copy and no copy compiled for one instruction set can
// stand in for another's (engine/CMakeLists.txt). The drivers take the instruction set's
// traits as a parameter, a type each file defines in its own anonymous namespace:
//
//   struct Isa {
//       static constexpr int kLanes;               // weight rows per vector
//       static constexpr auto rows_mask = &f;      // f(rows): the mask of a vector's first rows lanes
//       static Out out(float* c, int64_t ldc, int last_rows, Mask last_mask, bool accumulate);
//   };                                             // Out: where compute<MZ, RN> stores its tile
//
// (rows_mask points at the file's mask function rather than wrapping it, because GCC folds
// the constant pointer into a direct call whereas a wrapper changes how it inlines the
// driver loops), and a kind K (one weight format) provides kMZ (row vectors per panel),
// kChunk (k elements per packed chunk), kTileN (activation rows per micro-tile),
// weight_offset / weight_bytes / act_offset / act_bytes (where a chunk lies in a row),
// Scratch, pack, prepare and compute<MZ, RN>; the blocked driver also kMaxN,
// kPanelsPerBlock and Scratch::x0.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "engine/backend/cpu/kernels/tile_gemm.h"

namespace inferscope::simd {
namespace {

inline int imin(int64_t a, int64_t b) { return static_cast<int>(a < b ? a : b); }

// Runs K::compute<mz, rn> for mz = 1..MZ, rn = 1..K::kTileN.
template <class K, int MZ, int RN, class... A>
inline void dispatch_rn(int rn, A&... args) {
    if constexpr (RN > 0) {
        if (rn == RN) {
            K::template compute<MZ, RN>(args...);
        } else {
            dispatch_rn<K, MZ, RN - 1>(rn, args...);
        }
    }
}
template <class K, int MZ, class... A>
inline void dispatch(int mz, int rn, A&... args) {
    if constexpr (MZ > 0) {
        if (mz == MZ) {
            dispatch_rn<K, MZ, K::kTileN>(rn, args...);
        } else {
            dispatch<K, MZ - 1>(mz, rn, args...);
        }
    }
}

// True when there is nothing to multiply; with k = 0 the outputs are written as zeros.
inline bool write_zeros_if_empty(const TileGemmArgs& a) {
    if (a.n <= 0 || a.row_end <= a.row_begin) return true;
    if (a.k > 0) return false;
    for (int64_t i = 0; i < a.n; ++i) {
        for (int64_t r = a.row_begin; r < a.row_end; ++r) a.c[i * a.ldc + r] = 0.0f;
    }
    return true;
}

// Every cache line of [row, row + bytes) for `rows` rows `stride` bytes apart. The rows need
// not start on a line (activation buffers are not line-aligned), so a span of whole lines'
// worth of bytes usually touches one line more.
inline void prefetch_rows(const uint8_t* first, uint64_t stride, int rows, int bytes) {
    for (int j = 0; j < rows; ++j) {
        const uint8_t* row = first + static_cast<uint64_t>(j) * stride;
        const uint8_t* line = row - (reinterpret_cast<uintptr_t>(row) & 63);
        for (; line < row + bytes; line += 64) _mm_prefetch(reinterpret_cast<const char*>(line), _MM_HINT_T0);
    }
}

// Prefetches the weight rows the next pack will read, spread over the micro-tiles that run
// before it: packing reads a few cache lines from each of a panel's rows, which would
// otherwise wait on memory latency one row at a time.
class WeightPrefetch {
public:
    template <class K>
    void start(const TileGemmArgs& a, int64_t row, int rows, int64_t k0, int64_t tiles) {
        if (rows <= 0 || k0 >= a.k) {
            rows_ = 0;
            return;
        }
        base_ = a.weights + static_cast<uint64_t>(row) * a.weight_row_bytes + K::weight_offset(k0);
        stride_ = a.weight_row_bytes;
        rows_ = rows;
        bytes_ = K::weight_bytes(imin(K::kChunk, a.k - k0));
        per_step_ = tiles > 0 ? static_cast<int>((rows + tiles - 1) / tiles) : rows;
        done_ = 0;
    }
    void step() {
        const int count = imin(per_step_, rows_ - done_);
        if (count <= 0) return;
        prefetch_rows(base_ + static_cast<uint64_t>(done_) * stride_, stride_, count, bytes_);
        done_ += count;
    }

private:
    const uint8_t* base_ = nullptr;
    uint64_t stride_ = 0;
    int rows_ = 0, bytes_ = 0, per_step_ = 0, done_ = 0;
};

// The scratch of one call is a single stack object; this bounds it.
constexpr size_t kMaxScratchBytes = 64 * 1024;

// Driver for the float types: panels of Isa::kLanes * K::kMZ weight rows; per panel, k chunks
// of K::kChunk elements packed once; per chunk, tiles of K::kTileN activation rows, each
// prepared (converted) right before its micro-kernel runs.
template <class Isa, class K>
void run_panels(const TileGemmArgs& a) {
    if (write_zeros_if_empty(a)) return;
    constexpr int kLanes = Isa::kLanes;
    constexpr int kPanel = kLanes * K::kMZ;
    static_assert(sizeof(typename K::Scratch) <= kMaxScratchBytes, "scratch must stay a small stack buffer");
    typename K::Scratch s;
    const int64_t tiles = (a.n + K::kTileN - 1) / K::kTileN;
    WeightPrefetch prefetch;
    for (int64_t r0 = a.row_begin; r0 < a.row_end; r0 += kPanel) {
        const int nr = imin(kPanel, a.row_end - r0);
        const int mz = (nr + kLanes - 1) / kLanes;
        const int last_rows = nr - kLanes * (mz - 1);
        const auto last_mask = Isa::rows_mask(last_rows);
        for (int64_t k0 = 0; k0 < a.k; k0 += K::kChunk) {
            const int kc = imin(K::kChunk, a.k - k0);
            K::pack(a, r0, nr, k0, kc, s);
            if (k0 + K::kChunk < a.k) {
                prefetch.start<K>(a, r0, nr, k0 + K::kChunk, tiles);  // this panel's next chunk
            } else {
                prefetch.start<K>(a, r0 + kPanel, imin(kPanel, a.row_end - r0 - kPanel), 0, tiles);  // the next panel
            }
            for (int64_t i0 = 0; i0 < a.n; i0 += K::kTileN) {
                prefetch.step();
                const int rn = imin(K::kTileN, a.n - i0);
                const int next = imin(K::kTileN, a.n - i0 - rn);
                prefetch_rows(a.activations + static_cast<uint64_t>(i0 + rn) * a.activation_row_bytes + K::act_offset(k0),
                              a.activation_row_bytes, next, K::act_bytes(kc));
                K::prepare(a, i0, rn, k0, kc, s);
                const auto out = Isa::out(a.c + i0 * a.ldc + r0, a.ldc, last_rows, last_mask, k0 > 0);
                const int first = 0;
                dispatch<K, K::kMZ>(mz, rn, s, kc, first, out);
            }
        }
    }
}

// Driver for the quantized types (GotoBLAS-like): blocks of up to K::kMaxN activation rows
// and K::kPanelsPerBlock panels; per k chunk, the activation side data (scales, block sums)
// of the whole row block is prepared once, then every panel is packed and multiplied with
// all of it. The block's slice of c (panels x activation rows) stays in L2 across chunks.
template <class Isa, class K>
void run_blocked(const TileGemmArgs& a) {
    if (write_zeros_if_empty(a)) return;
    constexpr int kLanes = Isa::kLanes;
    constexpr int kPanel = kLanes * K::kMZ;
    constexpr int64_t kRowBlock = static_cast<int64_t>(kPanel) * K::kPanelsPerBlock;
    static_assert(sizeof(typename K::Scratch) <= kMaxScratchBytes, "scratch must stay a small stack buffer");
    typename K::Scratch s;
    WeightPrefetch prefetch;
    for (int64_t n0 = 0; n0 < a.n; n0 += K::kMaxN) {
        const int nn = imin(K::kMaxN, a.n - n0);
        const int64_t tiles = (nn + K::kTileN - 1) / K::kTileN;
        for (int64_t rb = a.row_begin; rb < a.row_end; rb += kRowBlock) {
            const int64_t rb_end = rb + kRowBlock < a.row_end ? rb + kRowBlock : a.row_end;
            for (int64_t k0 = 0; k0 < a.k; k0 += K::kChunk) {
                const int kc = imin(K::kChunk, a.k - k0);
                K::prepare(a, n0, nn, k0, kc, s);
                for (int64_t r0 = rb; r0 < rb_end; r0 += kPanel) {
                    const int nr = imin(kPanel, rb_end - r0);
                    const int mz = (nr + kLanes - 1) / kLanes;
                    const int last_rows = nr - kLanes * (mz - 1);
                    const auto last_mask = Isa::rows_mask(last_rows);
                    K::pack(a, r0, nr, k0, kc, s);
                    if (r0 + kPanel < rb_end) {
                        prefetch.start<K>(a, r0 + kPanel, imin(kPanel, rb_end - r0 - kPanel), k0, tiles);  // next panel
                    } else if (k0 + K::kChunk < a.k) {
                        prefetch.start<K>(a, rb, imin(kPanel, rb_end - rb), k0 + K::kChunk, tiles);  // next chunk
                    } else {
                        prefetch.start<K>(a, rb_end, imin(kPanel, a.row_end - rb_end), 0, tiles);  // next row block
                    }
                    for (int i0 = 0; i0 < nn; i0 += K::kTileN) {
                        prefetch.step();
                        const int rn = imin(K::kTileN, nn - i0);
                        if (r0 == rb) {
                            const int next = imin(K::kTileN, nn - i0 - rn);
                            prefetch_rows(s.x0 + static_cast<uint64_t>(i0 + rn) * a.activation_row_bytes, a.activation_row_bytes,
                                          next, K::act_bytes(kc));
                        }
                        const auto out = Isa::out(a.c + (n0 + i0) * a.ldc + r0, a.ldc, last_rows, last_mask, k0 > 0);
                        dispatch<K, K::kMZ>(mz, rn, s, kc, i0, out);
                    }
                }
            }
        }
    }
}

// The entry points (TileGemmFn) of a kind's kernel.
template <class Isa, class K>
void panels_kernel(const TileGemmArgs& args) {
    run_panels<Isa, K>(args);
}
template <class Isa, class K>
void blocked_kernel(const TileGemmArgs& args) {
    run_blocked<Isa, K>(args);
}

}  // namespace
}  // namespace inferscope::simd
