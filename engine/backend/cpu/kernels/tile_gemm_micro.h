#pragma once
// The instruction-set-neutral pieces of the tiled GEMM micro-kernels, written once for
// tile_gemm_ymm.h and tile_gemm_avx512.cpp: the tile of accumulators and its store, the
// whole F16 kind, the per-block and per-group scaling steps, the activation scales of the
// 32-element formats and the unpacking of K-quant rows. The integer product loops stay in
// the files: VPDPBUSD and the VPMADDUBSW / VPMADDWD pair are different algorithms.
//
// The rule of tile_gemm_driver.h holds: everything is in an anonymous namespace, so each file
// compiles its own copy with its own flags. The including file's traits add to the driver's:
//
//   using Vec = ...;                                   // kLanes floats
//   static Vec zero(), load(const float*), broadcast(const float*), fmadd(Vec, Vec, Vec),
//              mul(Vec, Vec), to_float(Int32Vec);
//   static void store_aligned(float*, Vec);
//   static Vec load_halves(const uint8_t* p, int count);  // count (< kLanes: the rest 0) F16 values
//   static void transpose(Vec (&rows)[kLanes]);           // kLanes x kLanes floats
//   static void store(const Out&, float* dst, Vec v, bool last_vector);  // one vector of a tile
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "engine/backend/cpu/kernels/byte_access.h"
#include "engine/backend/cpu/kernels/super_block_unpack.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/backend/cpu/kernels/tile_gemm_driver.h"

namespace inferscope::simd {
namespace {

template <int MZ, int RN, class V>
inline void fill_tile(V (&acc)[MZ][RN], V value) {
#pragma GCC unroll 8
    for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) acc[m][j] = value;
    }
}

// Row i of the tile goes to out.c + i * ldc; the panel's last row vector may be partial.
template <class Isa, int MZ, int RN, class Out, class V>
inline void store_tile(const Out& out, const V (&acc)[MZ][RN]) {
#pragma GCC unroll 8
    for (int m = 0; m < MZ; ++m) {
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) Isa::store(out, out.c + j * out.ldc + Isa::kLanes * m, acc[m][j], m == MZ - 1);
    }
}

// acc[m][j] += float(ia[m][j]) * dw[m] * dx[j]: one 32-element block, the weight scales of
// row vector m at dw + m * kLanes, the activation scale of row j at dx + j * dx_stride.
template <class Isa, int MZ, int RN, class V, class I>
inline void add_block_sums(V (&acc)[MZ][RN], const I (&ia)[MZ][RN], const float* dw, const float* dx, int dx_stride) {
#pragma GCC unroll 8
    for (int m = 0; m < MZ; ++m) {
        const V weight_scale = Isa::load(dw + Isa::kLanes * m);
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) {
            const V scale = Isa::mul(weight_scale, Isa::broadcast(dx + j * dx_stride));
            acc[m][j] = Isa::fmadd(Isa::to_float(ia[m][j]), scale, acc[m][j]);
        }
    }
}

// acc[m][j] += float(ia[m][j]) * scale[m]: one group of a super-block, the scales of row
// vector m at scales + m * kLanes.
template <class Isa, int MZ, int RN, class V, class I>
inline void add_group_sums(V (&acc)[MZ][RN], const I (&ia)[MZ][RN], const float* scales) {
#pragma GCC unroll 8
    for (int m = 0; m < MZ; ++m) {
        const V scale = Isa::load(scales + Isa::kLanes * m);
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) acc[m][j] = Isa::fmadd(Isa::to_float(ia[m][j]), scale, acc[m][j]);
    }
}

// acc[m][j] += min[m] * sum[j]: the min term of a block or group, the weight mins of row
// vector m at mins + m * kLanes, the activation sum of row j at sums + j * sums_stride.
template <class Isa, int MZ, int RN, class V>
inline void add_min_terms(V (&acc)[MZ][RN], const float* mins, const float* sums, int sums_stride) {
#pragma GCC unroll 8
    for (int m = 0; m < MZ; ++m) {
        const V min = Isa::load(mins + Isa::kLanes * m);
#pragma GCC unroll 32
        for (int j = 0; j < RN; ++j) acc[m][j] = Isa::fmadd(min, Isa::broadcast(sums + j * sums_stride), acc[m][j]);
    }
}

// Points the blocked kinds' scratch at the chunk: activation row n0, `offset` bytes into it.
template <class Scratch>
inline void start_activation_chunk(const TileGemmArgs& a, int64_t n0, int64_t offset, Scratch& s) {
    s.stride = a.activation_row_bytes;
    s.x0 = a.activations + static_cast<uint64_t>(n0) * a.activation_row_bytes + offset;
}

// x[j]: the micro-tile's activation row j (row i0 + j of the prepared ones), `offset` bytes in.
template <int RN, class Scratch>
inline void tile_activation_rows(const Scratch& s, int i0, int64_t offset, const uint8_t* (&x)[RN]) {
#pragma GCC unroll 32
    for (int j = 0; j < RN; ++j) x[j] = s.x0 + static_cast<uint64_t>(i0 + j) * s.stride + offset;
}

// Scratch of the 32-element formats: the activation rows' block scales (and, kWithSums,
// Q8_1's s) as floats, for rows n0 .. n0 + nn of the chunk at k0.
template <bool kWithSums, class Scratch>
inline void prepare_block_scales(const TileGemmArgs& a, int64_t n0, int nn, int64_t k0, int kc, int act_bytes, Scratch& s) {
    const int kb = kc / 32;
    start_activation_chunk(a, n0, (k0 / 32) * act_bytes, s);
    for (int j = 0; j < nn; ++j) {
        const uint8_t* row = s.x0 + static_cast<uint64_t>(j) * s.stride;
        for (int b = 0; b < kb; ++b) {
            s.dx[j][b] = half_to_float(load_u16(row + b * act_bytes));
            if constexpr (kWithSums) s.sx[j][b] = half_to_float(load_u16(row + b * act_bytes + 2));
        }
    }
}

// One super-block of each of kRows weight rows (`row_bytes` apart) unpacked into values,
// group scales and mins; rows past `rows` are zeros.
template <class Dec, int kRows, int kGroups>
inline void unpack_super_blocks(const uint8_t* first, uint64_t row_bytes, int rows, uint8_t (&values)[kRows][256],
                                float (&scale)[kRows][kGroups], float (&min)[kRows][kGroups]) {
    for (int t = 0; t < kRows; ++t) {
        if (t < rows) {
            Dec::decode(first + static_cast<uint64_t>(t) * row_bytes, values[t], scale[t], min[t]);
        } else {
            std::memset(values[t], 0, sizeof(values[t]));
            for (int g = 0; g < kGroups; ++g) scale[t][g] = min[t][g] = 0.0f;
        }
    }
}

// The unpacked rows' group scales (and mins) as row vector m of the packed layout
// [group][row vector][lane].
template <bool kHasMin, int kRows, int kGroups, int kMZ, int kMinGroups>
inline void pack_group_scales(const float (&scale)[kRows][kGroups], const float (&min)[kRows][kGroups], int m,
                              float (&packed_scale)[kGroups][kMZ][kRows], float (&packed_min)[kMinGroups][kMZ][kRows]) {
    for (int g = 0; g < kGroups; ++g) {
        for (int t = 0; t < kRows; ++t) packed_scale[g][m][t] = scale[t][g];
        if constexpr (kHasMin) {
            for (int t = 0; t < kRows; ++t) packed_min[g][m][t] = min[t][g];
        }
    }
}

// F16 weights and activations, both converted to F32: the weights when a panel's chunk is
// packed ([kk][panel rows]), each tile of activation rows right before its micro-kernel.
template <class Isa, int MZ_, int TileN_, int KC_>
struct F16Kind {
    static constexpr int kLanes = Isa::kLanes;
    static constexpr int kMZ = MZ_;            // row vectors per panel
    static constexpr int kChunk = KC_;         // k elements per packed chunk
    static constexpr int kTileN = TileN_;      // activation rows per micro-tile
    static constexpr int kPanelRows = kLanes * kMZ;
    static int64_t act_offset(int64_t k0) { return 2 * k0; }
    static int act_bytes(int kc) { return 2 * kc; }
    static int64_t weight_offset(int64_t k0) { return 2 * k0; }
    static int weight_bytes(int kc) { return 2 * kc; }
    struct Scratch {
        alignas(4 * kLanes) float w[kChunk * kPanelRows];  // [kk][panel rows]
        alignas(4 * kLanes) float x[kTileN * kChunk];      // [j][kk]
    };

    static void pack(const TileGemmArgs& a, int64_t r0, int nr, int64_t k0, int kc, Scratch& s) {
        for (int m = 0; m * kLanes < nr; ++m) {
            const int rows = imin(kLanes, nr - kLanes * m);
            const uint8_t* base = a.weights + static_cast<uint64_t>(r0 + kLanes * m) * a.weight_row_bytes + k0 * 2;
            for (int kk0 = 0; kk0 < kc; kk0 += kLanes) {
                const int cols = imin(kLanes, kc - kk0);
                typename Isa::Vec v[kLanes];
#pragma GCC unroll 32
                for (int t = 0; t < kLanes; ++t) {
                    v[t] = t < rows ? Isa::load_halves(base + static_cast<uint64_t>(t) * a.weight_row_bytes + kk0 * 2, cols)
                                    : Isa::zero();
                }
                Isa::transpose(v);
                float* dst = s.w + kk0 * kPanelRows + kLanes * m;
                for (int c = 0; c < cols; ++c) Isa::store_aligned(dst + c * kPanelRows, v[c]);
            }
        }
    }

    static void prepare(const TileGemmArgs& a, int64_t i0, int rn, int64_t k0, int kc, Scratch& s) {
        for (int j = 0; j < rn; ++j) {
            const uint8_t* src = a.activations + static_cast<uint64_t>(i0 + j) * a.activation_row_bytes + k0 * 2;
            float* dst = s.x + j * kChunk;
            for (int kk0 = 0; kk0 < kc; kk0 += kLanes) Isa::store_aligned(dst + kk0, Isa::load_halves(src + kk0 * 2, kc - kk0));
        }
    }

    template <int MZ, int RN, class Out>
    static void compute(const Scratch& s, int kc, int, const Out& out) {
        typename Isa::Vec acc[MZ][RN];
        fill_tile(acc, Isa::zero());
        const float* pw = s.w;
        const float* px = s.x;
#pragma GCC unroll 2
        for (int kk = 0; kk < kc; ++kk, pw += kPanelRows, ++px) {
            typename Isa::Vec w[MZ];
#pragma GCC unroll 8
            for (int m = 0; m < MZ; ++m) w[m] = Isa::load(pw + kLanes * m);
#pragma GCC unroll 32
            for (int j = 0; j < RN; ++j) {
                const typename Isa::Vec b = Isa::broadcast(px + j * kChunk);
#pragma GCC unroll 8
                for (int m = 0; m < MZ; ++m) acc[m][j] = Isa::fmadd(w[m], b, acc[m][j]);
            }
        }
        store_tile<Isa>(out, acc);
    }
};

}  // namespace
}  // namespace inferscope::simd
