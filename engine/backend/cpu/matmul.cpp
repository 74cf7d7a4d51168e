#include "engine/backend/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/half_gemm.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"

namespace inferscope {
namespace {

// Weight rows dequantized per thread for the BLAS fallback: bounded so the tile stays a few
// MiB whatever the row length.
constexpr int64_t kTileElements = int64_t{1} << 18;

// F32 weights: each thread multiplies its own rows with single-threaded OpenBLAS (the
// engine sets OpenBLAS to one thread, so no second set of threads competes for the cores).
void matmul_f32(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool) {
    const auto* weights = reinterpret_cast<const float*>(w.data);
    const auto cols = static_cast<blasint>(w.cols);
    pool.parallel_for(w.rows, [&](int64_t begin, int64_t end) {
        const auto rows = static_cast<blasint>(end - begin);
        const float* block = weights + begin * w.cols;
        if (n == 1) {
            cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, cols, 1.0f, block, cols, x, 1, 0.0f, y + begin, 1);
        } else {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), rows, cols, 1.0f, x, cols, block,
                        cols, 0.0f, y + begin, static_cast<blasint>(w.rows));
        }
    });
}

// The input rounded to F16 or BF16 (as llama.cpp encodes it for such weights) and widened
// back to F32, once per type and call; rows stay `cols` apart. With `interleaved`, also in
// the layout of the half kernel's wide path.
const MatmulScratch::RoundedInput& rounded_input(GgmlType type, int64_t cols, const float* x, int64_t n, ThreadPool& pool,
                                                 MatmulScratch& scratch, bool interleaved = false) {
    MatmulScratch::RoundedInput* slot = nullptr;
    for (auto& buffer : scratch.rounded_inputs) {
        if (buffer.type == type) slot = &buffer;
    }
    if (slot == nullptr) slot = &scratch.rounded_inputs.emplace_back(MatmulScratch::RoundedInput{type, {}, {}, false});
    if (!slot->current) {
        slot->values.resize(static_cast<size_t>(n * cols));
        slot->interleaved.clear();
        slot->current = true;
        float* values = slot->values.data();
        const auto round_range = [&](int64_t begin, int64_t end) {
            round_to_half(type, x + begin, end - begin, values + begin, active_cpu_isa());
        };
        if (n >= 4) {
            pool.parallel_for(n * cols, round_range);
        } else {
            round_range(0, n * cols);
        }
    }
    if (interleaved && slot->interleaved.empty()) {
        slot->interleaved.resize(static_cast<size_t>(interleaved_floats(n, cols)));
        pool.parallel_for(cols, [&](int64_t begin, int64_t end) {
            interleave_rows(slot->values.data(), n, cols, slot->interleaved.data(), begin, end);
        });
    }
    return *slot;
}

// F16/BF16 weights with several input rows and no tiled kernel for this CPU: round the
// input as llama.cpp does, dequantize tiles of weight rows to F32 and let OpenBLAS multiply.
void matmul_dequantized_gemm(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool,
                             MatmulScratch& scratch) {
    const float* rounded = rounded_input(w.type, w.cols, x, n, pool, scratch).values.data();
    const int64_t tile_rows = std::max<int64_t>(1, kTileElements / w.cols);
    scratch.dequantized.resize(static_cast<size_t>(tile_rows * w.cols * pool.size()));
    pool.parallel_for_indexed(w.rows, [&](int thread, int64_t begin, int64_t end) {
        float* tile = scratch.dequantized.data() + thread * tile_rows * w.cols;
        for (int64_t r0 = begin; r0 < end; r0 += tile_rows) {
            const int64_t r1 = std::min(end, r0 + tile_rows);
            for (int64_t r = r0; r < r1; ++r) dequantize_row(w.type, w.row(r), tile + (r - r0) * w.cols, w.cols);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), static_cast<blasint>(r1 - r0),
                        static_cast<blasint>(w.cols), 1.0f, rounded, static_cast<blasint>(w.cols), tile,
                        static_cast<blasint>(w.cols), 0.0f, y + r0, static_cast<blasint>(w.rows));
        }
    });
}

// Encodes every input row in the given dot encoding (once per encoding and call), rows
// split across threads when there are several.
const uint8_t* encoded_input(const RowDotKernels& kernels, int64_t cols, const float* x, int64_t n, ThreadPool& pool,
                             MatmulScratch& scratch) {
    const uint64_t row_bytes = ggml_row_bytes(kernels.activation_type, static_cast<uint64_t>(cols));
    MatmulScratch::EncodedInput* slot = nullptr;
    for (auto& buffer : scratch.encoded_inputs) {
        if (buffer.type != kernels.activation_type) continue;
        if (buffer.current) return buffer.bytes.data();
        slot = &buffer;
    }
    if (slot == nullptr) slot = &scratch.encoded_inputs.emplace_back(MatmulScratch::EncodedInput{kernels.activation_type, {}, false});
    slot->bytes.resize(row_bytes * static_cast<uint64_t>(n));
    slot->current = true;
    uint8_t* encoded = slot->bytes.data();
    const auto encode_rows = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) kernels.encode(x + i * cols, encoded + static_cast<uint64_t>(i) * row_bytes, cols);
    };
    if (n >= 4) {
        pool.parallel_for(n, encode_rows);
    } else {
        encode_rows(0, n);
    }
    return encoded;
}

// A matrix with its kernels and encoded input, ready for the shared row loop.
struct PreparedProduct {
    const WeightMatrix* w;
    float* y;
    RowDotKernels kernels;
    TileGemmFn tile;
    HalfGemmFn half;               // F16/BF16 weights with a few input rows: takes `rounded`
    const float* rounded;          // [n x cols] input rounded to the weight's half type
    const float* interleaved;      // the same interleaved by 16 rows (half kernel, wide path)
    const uint8_t* input;
    uint64_t input_row_bytes;
    int64_t first_row;  // of this matrix in the concatenation of all rows
};

constexpr int64_t kRowDotPassBytes = 24 * 1024;

// Rows [begin, end) of one matrix, for all n input rows.
void multiply_rows(const PreparedProduct& p, int64_t n, int64_t begin, int64_t end) {
    const WeightMatrix& w = *p.w;
    if (p.half != nullptr) {
        p.half({w.cols, w.data, w.row_bytes, begin, end, p.rounded, p.interleaved, n, p.y, w.rows});
        return;
    }
    if (p.tile != nullptr) {
        p.tile({w.cols, w.data, w.row_bytes, begin, end, p.input, p.input_row_bytes, n, p.y, w.rows});
        return;
    }
    if (n == 1) {  // decode: the whole range in one call (rows in groups, weights prefetched ahead)
        // The input was just written by another core; requesting all its lines at once
        // costs one transfer latency instead of one per line as the first rows reach them.
        for (uint64_t offset = 0; offset < p.input_row_bytes; offset += 64) __builtin_prefetch(p.input + offset);
        p.kernels.dot_rows(w.cols, w.row(begin), w.row_bytes, end - begin, p.input, p.y + begin);
        return;
    }
    // Several input rows without a tiled kernel. With batch kernels each weight row is read
    // and unpacked once for all of them: batch-bench ms per step (Intel Xeon, 1 Dec), against
    // the passes below, Q4_0 B = 2 25.20 -> 15.42, B = 4 34.27 -> 19.73; Q8_0 B = 2 33.27 ->
    // 21.65, B = 4 56.18 -> 27.37; F16 B = 2 48.85 -> 45.58, B = 4 70.13 -> 54.75; on a 1B
    // model, Q4_K B = 2 54.69, 55.16 -> 38.01, 42.02, B = 4 101.39, 107.83 -> 50.13, 56.29.
    if (p.kernels.dot_rows_batch != nullptr) {
        p.kernels.dot_rows_batch(w.cols, w.row(begin), w.row_bytes, end - begin, p.input, p.input_row_bytes, n, p.y + begin,
                                 w.rows);
        return;
    }
    // Otherwise a few weight rows at a time (they stay in the L1 cache) against every input
    // row. The pass covers about half of L1 (whole groups of 8 rows, the AVX-512 kernels'
    // group): one dot_rows call per input row and pass then streams enough rows for its
    // prefetching to run ahead. With 4 rows per pass, batch-bench B = 2 / 3 made Q4_0
    // 162-166 / 139-173 t/s and F16 54-55 / 64-66; with 24 KiB 182-186 / 193-195 and 64-73 /
    // 78-89 (Q8_0 unchanged within noise, 111-124 / 130-147).
    const int64_t rows_per_pass = std::max<int64_t>(8, kRowDotPassBytes / static_cast<int64_t>(w.row_bytes) / 8 * 8);
    for (int64_t r = begin; r < end; r += rows_per_pass) {
        const int64_t count = std::min(rows_per_pass, end - r);
        for (int64_t i = 0; i < n; ++i) {
            p.kernels.dot_rows(w.cols, w.row(r), w.row_bytes, count, p.input + static_cast<uint64_t>(i) * p.input_row_bytes,
                               p.y + i * w.rows + r);
        }
    }
}

// Below this many input rows the tiled kernels lose to row dot products that keep a few
// weight rows in L1 and run every input row against them: a tile pads the batch to its
// width and packs the weights for reuse a small batch does not have. Measured with
// batch-bench on a 0.5B model (ms per step, B = 2 / 4 / 8): Q4_0 tiles 50 / 66 / 72 against
// rows 34 / 62-68 / 75-105; F16 tiles 158 / 172 / 178 against rows 77 / 118 / 210-240. The
// AVX-512 row dots run groups of 8 weight rows, which moved their quantized limit to 5
// (batch-bench tokens/s, rows against tiles, two alternating runs each: B = 4 Q4_0 163-181
// against 157-158, Q8_0 134-135 against 125-128; B = 5 Q8_0 139-142 against 146-157).
// Where a family has batch row kernels for a quantized format (each weight row unpacked once
// for all the input rows: the AVX-512 kernels of the legacy formats and the K-quants) they
// beat the tiles on an Intel Xeon up to 8 rows for the 4-bit formats and the K-quants, up to
// 7 for the others (batch-bench ms per step, tiles against batch kernels, one or two runs
// each: Q4_0 B = 5 35.26 / 32.14, B = 8 44.91 / 37.20, B = 12 50.90 / 60.65; Q8_0 B = 5
// 44.09 / 38.32, B = 8 45.17 / 47.48, B = 12 46.85 / 70.72; on a 1B model, Q4_K B = 5
// 104.23, 113.61 / 87.15, 76.60, B = 8 123.23, 143.50 / 99.75, 106.64, B = 16 118.31, 195.26
// / 182.99, 192.27; Q6_K B = 5 118.19, 130.65 / 101.42, 96.52, B = 8 124.88, 139.94 /
// 118.33, 119.32, B = 12 154.20, 146.71 / 161.60, 153.29).
int64_t tile_gemm_min_rows(GgmlType weight_type, CpuIsa isa) {
    if (weight_type == GgmlType::F16 || weight_type == GgmlType::BF16) return 8;
    if (isa != CpuIsa::Avx512) return 4;
    if (row_dot_kernels(weight_type, isa).dot_rows_batch == nullptr) return 5;
    const bool k_quant = ggml_type_traits(weight_type).block_elements == 256;
    return k_quant || weight_type == GgmlType::Q4_0 || weight_type == GgmlType::Q4_1 ? 9 : 8;
}

// F16/BF16 products with 8 to 64 input rows take the untransposed half kernel, except where
// its wide path would leave more than an eighth of its lanes empty (17..20 rows in groups of
// 8, 25..27 in groups of 16, 33..41, 49..55). Measured with bench_tile_gemm on both cores
// at once (GFLOP/s per core, 4864 x 896 and 896 x 4864 weights read from memory), half
// kernel against the tiled one:
//   n = 8: 159-165 / 142-149 vs 89-94 / 85-92;  n = 16: 133-135 / 132-135 vs 123 / 114-117
//   (one element per lane; two per lane made it 125-153 / 124-155);
//   n = 32: 170-175 / 168-172 vs 141-149 / 134-147.
// Below 8 rows the row dot products stay: batch-bench B = 2 made 57 and 40 tokens/s with
// them against 38 and 34 with the half kernel.
HalfGemmFn half_kernel_for(const WeightMatrix& w, int64_t n, CpuIsa isa) {
    if (n < 8 || n > kHalfGemmMaxRows) return nullptr;
    const HalfGemmWideLayout layout = half_gemm_wide_layout(n);
    const int64_t lanes = layout.vectors * layout.rows_per_vector;
    if (n > kHalfGemmWideFrom && 8 * n < 7 * lanes) return nullptr;
    return half_gemm_kernel(w.type, isa);
}

bool uses_blas(const WeightMatrix& w, int64_t n, TileGemmFn tile, CpuIsa isa) {
    return w.type == GgmlType::F32 ||
           (n >= tile_gemm_min_rows(w.type, isa) && tile == nullptr && (w.type == GgmlType::F16 || w.type == GgmlType::BF16));
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool, MatmulScratch& scratch) {
    const MatmulOutput output{&w, y};
    matmul_shared_input(std::span<const MatmulOutput>(&output, 1), x, n, pool, scratch);
}

void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n, ThreadPool& pool,
                         MatmulScratch& scratch) {
    if (n <= 0 || outputs.empty()) return;
    const CpuIsa isa = active_cpu_isa();
    for (auto& buffer : scratch.encoded_inputs) buffer.current = false;  // a new input
    for (auto& buffer : scratch.rounded_inputs) buffer.current = false;
    std::vector<PreparedProduct> products;
    int64_t total_rows = 0;
    for (const MatmulOutput& out : outputs) {
        const WeightMatrix& w = *out.w;
        if (const HalfGemmFn half = half_kernel_for(w, n, isa)) {
            const MatmulScratch::RoundedInput& input = rounded_input(w.type, w.cols, x, n, pool, scratch, n >= kHalfGemmWideFrom);
            const float* interleaved = input.interleaved.empty() ? nullptr : input.interleaved.data();
            products.push_back({&w, out.y, {}, nullptr, half, input.values.data(), interleaved, nullptr, 0, total_rows});
            total_rows += w.rows;
            continue;
        }
        const TileGemmFn tile = n >= tile_gemm_min_rows(w.type, isa) ? tile_gemm_kernel(w.type, isa) : nullptr;
        if (uses_blas(w, n, tile, isa)) {
            if (w.type == GgmlType::F32) {
                matmul_f32(w, x, n, out.y, pool);
            } else {
                matmul_dequantized_gemm(w, x, n, out.y, pool, scratch);
            }
            continue;
        }
        const RowDotKernels kernels = row_dot_kernels(w.type, isa);
        const uint64_t row_bytes = ggml_row_bytes(kernels.activation_type, static_cast<uint64_t>(w.cols));
        products.push_back({&w, out.y, kernels, tile, nullptr, nullptr, nullptr, encoded_input(kernels, w.cols, x, n, pool, scratch), row_bytes, total_rows});
        total_rows += w.rows;
    }
    if (products.empty()) return;
    // Each thread streams its own contiguous share of the rows, front to back (a shared counter
    // handing out chunks made 70-90 instead of 120 tokens/s for Q4_0 decode on a 0.5B model:
    // short runs of weights and a cache line bouncing between the cores). Row products run
    // in the pool's pieces, so a thread done early takes the back of a slower one's share
    // (Q4_0 decode 6.54 -> 6.23 ms per token). The pieces do not depend on timing, so neither
    // does any row's result. The tile and half kernels get whole shares: cut into pieces,
    // Q4_0 pp512 fell from 1195-1201 to 1099-1158 tokens/s.
    const bool tile_or_half = std::any_of(products.begin(), products.end(),
                                          [](const PreparedProduct& p) { return p.tile != nullptr || p.half != nullptr; });
    pool.parallel_for(total_rows, [&](int64_t begin, int64_t end) {
        for (const PreparedProduct& p : products) {
            const int64_t first = std::max(begin, p.first_row);
            const int64_t last = std::min(end, p.first_row + p.w->rows);
            if (first < last) multiply_rows(p, n, first - p.first_row, last - p.first_row);
        }
    }, tile_or_half ? ThreadPool::Split::shares : ThreadPool::Split::pieces);
}

}  // namespace inferscope
