#pragma once
// The tuning of the AVX2 kernels in one place: the prefetch distance and batch size of the row
// dot products, tile shapes and blocking of the tiled GEMM, passes of the attention loops.
// Named constants only (no code), for the *_avx2.cpp files; tuning_avx512.h holds the
// AVX-512 kernels' own.
#include <cstdint>

namespace inferscope::simd::avx2_tuning {

// ---------------------------------------------------------------- row dot products

// Software prefetch distance of the weights: the hardware prefetchers alone leave part of
// the bandwidth unused (see stream_read_avx512.cpp).
constexpr int64_t kRowDotPrefetchBytes = 4096;
// Activation rows per pass of dot_rows_batch: their accumulators (two per activation row) and
// block scales or integer sums stay in the 16 registers beside a block's unpacked weights.
constexpr int kMaxBatch = 4;
// The same for Q4_1 and Q5_1, whose min terms take one more register per activation row.
constexpr int kMaxBatchWithMin = 3;
// The same for F16 and BF16: four accumulators per activation row beside the weight's four vectors.
constexpr int kMaxBatchHalves = 2;

// ---------------------------------------------------------------- tiled GEMM

// A micro-tile: 8-row weight vectors x activation rows, the MZ x RN accumulators held in
// registers. The shapes below are the fastest found per format: the legacy formats' on AMD
// Zen 5, the K-quants' and IQ4_XS's on Intel cores running AVX2.
struct TileShape {
    int weight_vectors;
    int activation_rows;
};
// F16: 12 accumulators, 3 weight vectors and a broadcast fill the 16 registers.
constexpr TileShape kF16Tile{3, 4};
constexpr TileShape kQ4_0Tile{2, 3};
constexpr TileShape kQ5_0Tile{1, 3};
constexpr TileShape kQ8_0Tile{2, 3};
constexpr TileShape kIQ4_NLTile{2, 3};
constexpr TileShape kQ2_KTile{1, 4};
constexpr TileShape kQ3_KTile{1, 4};
constexpr TileShape kQ4_KTile{2, 3};
constexpr TileShape kQ5_KTile{2, 3};
constexpr TileShape kQ6_KTile{1, 4};
constexpr TileShape kIQ4_XSTile{1, 6};
// F16: k elements packed per chunk; each chunk's sums are added to c, so this also bounds
// every float summation chain.
constexpr int kF16ChunkElements = 96;
// Blocks packed per chunk (32-element block formats), within the 64 KiB scratch beside
// kTileActivationRows rows' scales.
constexpr int kLegacyChunkBlocks = 16;
// Panels multiplied with one k chunk of prepared activations (the row block), so that the
// block's slice of c stays in L2 across chunks.
constexpr int kPanelsPerBlock = 8;
// Activation rows whose scales and block sums are prepared at once, bounded by the 64 KiB
// scratch (32 KiB of it Q8_0's activation scales).
constexpr int kTileActivationRows = 512;

// ---------------------------------------------------------------- attention

// Query heads whose score accumulators are kept in registers at once.
constexpr int kAttentionScoreHeads = 8;
// 8-float chunks of every head's output accumulated per pass over V (64 dimensions).
constexpr int kAttentionValueChunks = 8;

// ---------------------------------------------------------------- streaming read

// Software prefetch distance of stream_read: the hardware prefetchers alone leave part of
// the bandwidth unused (see stream_read_avx512.cpp).
constexpr int kStreamReadPrefetchBytes = 4096;

}  // namespace inferscope::simd::avx2_tuning
