#pragma once
// The tuning of the AVX-512 kernels in one place: prefetch distances, row groups and batch
// sizes of the row dot products, tile shapes and blocking of the tiled and half-precision
// GEMMs, passes of the attention loops. Named constants only (no code), for the *_avx512.cpp
// files; tuning_avx2.h holds the AVX2 kernels' own.
#include <cstdint>

namespace inferscope::simd::avx512_tuning {

// ---------------------------------------------------------------- row dot products

// Software prefetch distance of one stream of weights, the default of every row dot kernel:
// the hardware prefetchers alone leave part of the bandwidth unused (stream_read_avx512.cpp).
constexpr int64_t kRowDotPrefetchBytes = 4096;
// Q4_0, Q4_1 and IQ4_NL (QuadRows): 1 KiB ahead in each row of the FFN down product (2736
// bytes), and still two groups ahead for rows of 896 columns, which hides more latency.
constexpr int64_t kQuadRowsPrefetchBytes = 8192;
// Q8_0 (PairRows): its rows of 896 columns are 952 bytes, so the default would put each row's
// prefetches only 512 bytes ahead, too close to hide the latency; this is two groups ahead.
constexpr int64_t kQ8_0PrefetchBytes = 16384;
// IQ4_XS: 4-bit weights like QuadRows', prefetched as far ahead.
constexpr int64_t kIQ4_XSPrefetchBytes = 8192;

// Rows read together: with every core streaming, a core's share of the bandwidth is bound
// by how many lines it has in flight, and eight rows are eight streams with their own
// prefetches.
constexpr int kRowGroup = 8;
// A range whose eighths are shorter than this is read in groups of neighbouring rows rather
// than as eight streams, because neighbours' prefetches reach into the rows after a short
// range and eight short streams' do not (see dot_rows in row_dot_avx512.h).
constexpr uint64_t kMinStreamBytes = 8192;
// Activation rows per pass of dot_rows_batch: their accumulators (2 to 4 per activation
// row) stay in registers beside a row's unpacked weights.
constexpr int kMaxBatch = 4;

// ---------------------------------------------------------------- tiled GEMM

// A micro-tile: 16-row weight vectors x activation rows, the MZ x RN accumulators held in
// registers.
struct TileShape {
    int weight_vectors;
    int activation_rows;
};
// F16: 25 accumulators, 5 weight vectors and a broadcast fill 31 of the 32 registers.
constexpr TileShape kF16Tile{5, 5};
// F16: k elements packed per chunk; each chunk's sums are added to c, so this also bounds
// every float summation chain.
constexpr int kF16ChunkElements = 96;
// BF16: 24 accumulators beside 4 weight vectors and the broadcasts.
constexpr TileShape kBf16Tile{4, 6};
// BF16: k elements packed per chunk, 128 pairs x 64 rows (32 KiB of packed weights).
constexpr int kBf16ChunkElements = 256;
// 32-element block formats: 12 float and 12 integer accumulators beside 3 weight vectors.
constexpr TileShape kLegacyTile{3, 4};
// Blocks packed per chunk (Q4_0, Q5_0, Q8_0, IQ4_NL): twice as many would not fit the 64 KiB
// scratch beside kTileActivationRows rows' scales.
constexpr int kLegacyChunkBlocks = 16;
// Blocks packed per chunk for Q4_1 and Q5_1, half of kLegacyChunkBlocks because their mins
// and activation sums double the scratch per block.
constexpr int kLegacyWithMinChunkBlocks = 8;
// Panels multiplied with one k chunk of prepared activations (the row block, legacy formats),
// so that the block's slice of c stays in L2 across chunks.
constexpr int kLegacyPanelsPerBlock = 4;
// K-quants, IQ4_XS: accumulators, block sums and integer sums (3 x 8) beside 2 weight vectors.
constexpr TileShape kKQuantTile{2, 4};
// Super-blocks packed per chunk (K-quants, IQ4_XS), one 256-element super-block each.
constexpr int kKQuantChunkSuperBlocks = 1;
// Panels per row block for the K-quants, as kLegacyPanelsPerBlock.
constexpr int kKQuantPanelsPerBlock = 6;
// Activation rows whose scales and block sums are prepared at once, bounded by the 64 KiB
// scratch (32 KiB of it the legacy formats' activation scales).
constexpr int kTileActivationRows = 512;

// ---------------------------------------------------------------- half-precision GEMM

// Narrow path: weight rows per tile, 3 x 8 accumulators in 24 of the 32 registers.
constexpr int kHalfGemmTileRows = 3;
// Narrow path: activation rows per tile (groups of at most this many, of equal size).
constexpr int kHalfGemmMaxGroup = 8;
// Wide path: elements of each weight row widened to a stack buffer at a time.
constexpr int kHalfGemmChunkElements = 256;
// Weight rows each group of activation rows runs over before the next group, so that the
// block's weights come from L2 for the later groups and each group's activations stay in L1.
constexpr int64_t kHalfGemmRowBlock = 96;

// ---------------------------------------------------------------- attention

// Query heads whose score accumulators are kept in registers at once.
constexpr int kAttentionScoreHeads = 8;
// Query heads per pass over V: 8 heads x 2 chunks of 16 dimensions are 16 accumulators,
// well inside the 32 registers.
constexpr int kAttentionValueHeads = 8;

// ---------------------------------------------------------------- streaming read

// Software prefetch distance of stream_read: the hardware prefetchers alone leave part of
// the bandwidth unused.
constexpr int kStreamReadPrefetchBytes = 4096;

}  // namespace inferscope::simd::avx512_tuning
