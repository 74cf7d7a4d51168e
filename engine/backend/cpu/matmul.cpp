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
    // and unpacked once for all of them, where the passes below unpack it once per input row.
    if (p.kernels.dot_rows_batch != nullptr) {
        p.kernels.dot_rows_batch(w.cols, w.row(begin), w.row_bytes, end - begin, p.input, p.input_row_bytes, n, p.y + begin,
                                 w.rows);
        return;
    }
    // Otherwise a few weight rows at a time (they stay in the L1 cache) against every input
    // row. The pass covers about half of L1 (whole groups of 8 rows, the AVX-512 kernels'
    // group): one dot_rows call per input row and pass then streams enough rows for its
    // prefetching to run ahead, which a pass of a few rows is too short for.
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
// width and packs the weights for reuse a small batch does not have. The AVX-512 row dots,
// which run groups of 8 weight rows, stay ahead for quantized formats up to 4 input rows.
// Where a family has batch row kernels for a quantized format (each weight row unpacked once
// for all the input rows: the AVX-512 kernels of the legacy formats and the K-quants) they
// beat the tiles up to 8 rows for the 4-bit formats and the K-quants, up to 7 for the others.
// The 256-bit families' batch kernels beat their tiles in batched decode up to 4 rows, and
// without AVX-VNNI (whose tiles lack VPDPBUSD) up to 8 for Q8_0, Q2_K, Q3_K and IQ4_XS.
int64_t tile_gemm_min_rows(GgmlType weight_type, CpuIsa isa) {
    if (weight_type == GgmlType::F16 || weight_type == GgmlType::BF16) return 8;
    if ((isa == CpuIsa::Avx2 || isa == CpuIsa::AvxVnni) && row_dot_kernels(weight_type, isa).dot_rows_batch != nullptr) {
        const bool slow_avx2_tiles = weight_type == GgmlType::Q8_0 || weight_type == GgmlType::Q2_K ||
                                     weight_type == GgmlType::Q3_K || weight_type == GgmlType::IQ4_XS;
        return isa == CpuIsa::Avx2 && slow_avx2_tiles ? 9 : 5;
    }
    if (isa != CpuIsa::Avx512) return 4;
    if (row_dot_kernels(weight_type, isa).dot_rows_batch == nullptr) return 5;
    const bool k_quant = ggml_type_traits(weight_type).block_elements == 256;
    return k_quant || weight_type == GgmlType::Q4_0 || weight_type == GgmlType::Q4_1 ? 9 : 8;
}

// F16/BF16 products with 8 to 64 input rows take the untransposed half kernel, which beats
// the tiled one there, except where its wide path would leave more than an eighth of its
// lanes empty (17..20 rows in groups of 8, 25..27 in groups of 16, 33..41, 49..55): empty
// lanes are wasted multiply-adds. Below 8 rows the row dot products beat the half kernel.
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
    // Each thread streams its own contiguous share of the rows, front to back: a shared
    // counter handing out chunks would give short runs of weights and a cache line bouncing
    // between the cores. Row products run in the pool's pieces, so a thread done early takes
    // the back of a slower one's share. The pieces do not depend on timing, so neither does
    // any row's result. The tile and half kernels get whole shares: cutting them into pieces
    // costs those kernels more than the balancing wins back.
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
