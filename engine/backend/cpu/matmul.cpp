#include "engine/backend/cpu/matmul.h"

#include <cblas.h>

#include <algorithm>

#include "engine/core/fp16.h"
#include "engine/formats/quant.h"

namespace inferscope {
namespace {

// Weight rows dequantized per tile for the float GEMM path: bounded so the tile stays
// a few MiB whatever the row length.
constexpr int64_t kTileElements = int64_t{1} << 20;

void matmul_f32(const WeightMatrix& w, const float* x, int64_t n, float* y) {
    const auto* weights = reinterpret_cast<const float*>(w.data);
    const auto rows = static_cast<blasint>(w.rows);
    const auto cols = static_cast<blasint>(w.cols);
    if (n == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, rows, cols, 1.0f, weights, cols, x, 1, 0.0f, y, 1);
    } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), rows, cols, 1.0f, x, cols,
                    weights, cols, 0.0f, y, rows);
    }
}

// F16/BF16 weights with several input rows: round the input as llama.cpp does, dequantize
// a tile of weight rows to F32 and let OpenBLAS multiply.
void matmul_dequantized_gemm(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool,
                             MatmulScratch& scratch) {
    const bool half = w.type == GgmlType::F16;
    scratch.rounded_input.resize(static_cast<size_t>(n * w.cols));
    for (int64_t i = 0; i < n * w.cols; ++i) {
        scratch.rounded_input[static_cast<size_t>(i)] = half ? round_to_fp16(x[i]) : round_to_bf16(x[i]);
    }
    const int64_t tile_rows = std::max<int64_t>(1, std::min(w.rows, kTileElements / w.cols));
    scratch.dequantized.resize(static_cast<size_t>(tile_rows * w.cols));
    for (int64_t r0 = 0; r0 < w.rows; r0 += tile_rows) {
        const int64_t r1 = std::min(w.rows, r0 + tile_rows);
        pool.parallel_for(r1 - r0, [&](int64_t begin, int64_t end) {
            for (int64_t r = begin; r < end; ++r) {
                dequantize_row(w.type, w.row(r0 + r), scratch.dequantized.data() + r * w.cols, w.cols);
            }
        });
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(n), static_cast<blasint>(r1 - r0),
                    static_cast<blasint>(w.cols), 1.0f, scratch.rounded_input.data(), static_cast<blasint>(w.cols),
                    scratch.dequantized.data(), static_cast<blasint>(w.cols), 0.0f, y + r0,
                    static_cast<blasint>(w.rows));
    }
}

// Every other case: encode each input row in the weight type's dot format once, then one
// block dot product per (weight row, input row), weight rows split across threads.
void matmul_vec_dot(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool,
                    MatmulScratch& scratch) {
    const GgmlType dot_type = vec_dot_type(w.type);
    const uint64_t encoded_row_bytes = ggml_row_bytes(dot_type, static_cast<uint64_t>(w.cols));
    scratch.encoded_input.resize(static_cast<size_t>(encoded_row_bytes * static_cast<uint64_t>(n)));
    for (int64_t i = 0; i < n; ++i) {
        quantize_row(dot_type, x + i * w.cols, scratch.encoded_input.data() + static_cast<uint64_t>(i) * encoded_row_bytes,
                     w.cols);
    }
    const uint8_t* encoded = scratch.encoded_input.data();
    pool.parallel_for(w.rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const uint8_t* weight_row = w.row(r);
            for (int64_t i = 0; i < n; ++i) {
                y[i * w.rows + r] = vec_dot(w.type, w.cols, weight_row, encoded + static_cast<uint64_t>(i) * encoded_row_bytes);
            }
        }
    });
}

}  // namespace

void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool, MatmulScratch& scratch) {
    if (n <= 0) return;
    if (w.type == GgmlType::F32) {
        matmul_f32(w, x, n, y);
    } else if ((w.type == GgmlType::F16 || w.type == GgmlType::BF16) && n > 1) {
        matmul_dequantized_gemm(w, x, n, y, pool, scratch);
    } else {
        matmul_vec_dot(w, x, n, y, pool, scratch);
    }
}

}  // namespace inferscope
