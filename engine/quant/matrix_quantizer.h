#pragma once
// One weight matrix through one scheme, on all threads of a pool: the matrix as F32, its
// outlier statistics, its quantized bytes (as the engine executes them) and the error
// against the original.
#include <cstdint>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "engine/quant/scheme.h"

namespace inferscope {

class ThreadPool;
struct WeightMatrix;

// Statistics of W over all its elements. std is the population standard deviation around
// the mean; "beyond" counts weights with |w| > k_sigma x std.
struct WeightStats {
    double mean_abs = 0;
    double std = 0;
    double max_abs = 0;
    double max_over_std = 0;  // max|w| / std
    double k_sigma = 6;
    int64_t beyond_k_sigma = 0;
    double beyond_share = 0;  // beyond_k_sigma / elements
};

struct QuantError {
    double relative = 0;  // ||W - W_hat||_F / ||W||_F (0 for an all-zero W)
    double max_abs = 0;   // max |W - W_hat|
};

struct QuantizedMatrix {
    GgmlType type = GgmlType::F32;  // scheme.execution_type()
    std::vector<uint8_t> bytes;     // [rows x ggml_row_bytes(type, cols)]
    QuantError error;
};

// W as F32, [rows x cols] row-major, dequantized from the matrix's own type. `out` is
// resized to fit; passing the same vector for every matrix saves fresh pages each time.
void matrix_to_f32(const WeightMatrix& matrix, ThreadPool& pool, std::vector<float>& out);

WeightStats weight_stats(const float* w, int64_t n, double k_sigma, ThreadPool& pool);

// Quantizes w [rows x cols] (the caller has run scheme.check_shape); `absmax` is max|W|
// (from weight_stats) for tensor granularity. GGUF schemes use llama-quantize's encoders.
// `storage` becomes the result's bytes (resized), so a caller that discards the bytes can
// hand the same buffer back for the next matrix.
QuantizedMatrix quantize_matrix(const QuantScheme& scheme, const float* w, int64_t rows, int64_t cols, float absmax,
                                ThreadPool& pool, std::vector<uint8_t> storage = {});

}  // namespace inferscope
