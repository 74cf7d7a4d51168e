#include "engine/quant/matrix_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/core/thread_pool.h"
#include "engine/formats/quant.h"
#include "engine/formats/quant_ref.h"
#include "engine/model/model.h"
#include "engine/quant/codecs.h"

namespace inferscope {
namespace {

// Per-thread partial sums, padded so that threads do not share a cache line.
struct alignas(64) MomentSums {
    double sum = 0;
    double sum_abs = 0;
    double sum_squares = 0;
    float max_abs = 0;
    int64_t beyond = 0;
};

struct alignas(64) ErrorSums {
    double diff_squares = 0;
    double ref_squares = 0;
    float max_abs_diff = 0;

    void add(const float* w, const float* w_hat, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
            const double diff = static_cast<double>(w[i]) - static_cast<double>(w_hat[i]);
            diff_squares += diff * diff;
            ref_squares += static_cast<double>(w[i]) * static_cast<double>(w[i]);
            max_abs_diff = std::max(max_abs_diff, static_cast<float>(std::fabs(diff)));
        }
    }
};

QuantError combine_errors(const std::vector<ErrorSums>& parts) {
    ErrorSums total;
    for (const ErrorSums& p : parts) {
        total.diff_squares += p.diff_squares;
        total.ref_squares += p.ref_squares;
        total.max_abs_diff = std::max(total.max_abs_diff, p.max_abs_diff);
    }
    QuantError error;
    error.relative = total.ref_squares > 0 ? std::sqrt(total.diff_squares / total.ref_squares) : 0.0;
    error.max_abs = total.max_abs_diff;
    return error;
}

}  // namespace

void matrix_to_f32(const WeightMatrix& matrix, ThreadPool& pool, std::vector<float>& out) {
    out.resize(static_cast<size_t>(matrix.rows * matrix.cols));  // [rows x cols]
    pool.parallel_for(matrix.rows, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) dequantize_row(matrix.type, matrix.row(r), out.data() + r * matrix.cols, matrix.cols);
    });
}

WeightStats weight_stats(const float* w, int64_t n, double k_sigma, ThreadPool& pool) {
    std::vector<MomentSums> parts(static_cast<size_t>(pool.size()));
    pool.parallel_for_indexed(n, [&](int thread, int64_t begin, int64_t end) {
        MomentSums& s = parts[static_cast<size_t>(thread)];
        for (int64_t i = begin; i < end; ++i) {
            const double v = w[i];
            s.sum += v;
            s.sum_abs += std::fabs(v);
            s.sum_squares += v * v;
            s.max_abs = std::max(s.max_abs, std::fabs(w[i]));
        }
    });
    MomentSums total;
    for (const MomentSums& p : parts) {
        total.sum += p.sum;
        total.sum_abs += p.sum_abs;
        total.sum_squares += p.sum_squares;
        total.max_abs = std::max(total.max_abs, p.max_abs);
    }
    WeightStats stats;
    const double count = static_cast<double>(std::max<int64_t>(n, 1));
    const double mean = total.sum / count;
    stats.mean_abs = total.sum_abs / count;
    stats.std = std::sqrt(std::max(0.0, total.sum_squares / count - mean * mean));
    stats.max_abs = total.max_abs;
    stats.max_over_std = stats.std > 0 ? stats.max_abs / stats.std : 0.0;
    stats.k_sigma = k_sigma;
    const double threshold = k_sigma * stats.std;
    pool.parallel_for_indexed(n, [&](int thread, int64_t begin, int64_t end) {
        int64_t beyond = 0;
        for (int64_t i = begin; i < end; ++i) beyond += std::fabs(static_cast<double>(w[i])) > threshold ? 1 : 0;
        parts[static_cast<size_t>(thread)].beyond += beyond;
    });
    for (const MomentSums& p : parts) stats.beyond_k_sigma += p.beyond;
    stats.beyond_share = static_cast<double>(stats.beyond_k_sigma) / count;
    return stats;
}

QuantizedMatrix quantize_matrix(const QuantScheme& scheme, const float* w, int64_t rows, int64_t cols, float absmax,
                                ThreadPool& pool, std::vector<uint8_t> storage) {
    QuantizedMatrix result;
    result.type = scheme.execution_type();
    const uint64_t row_bytes = ggml_row_bytes(result.type, static_cast<uint64_t>(cols));
    result.bytes = std::move(storage);
    result.bytes.resize(row_bytes * static_cast<uint64_t>(rows));
    std::vector<ErrorSums> errors(static_cast<size_t>(pool.size()));
    std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));  // [cols] per thread
    pool.parallel_for_indexed(rows, [&](int thread, int64_t begin, int64_t end) {
        ErrorSums& err = errors[static_cast<size_t>(thread)];
        if (!scheme.executes_packed()) {
            auto* out = reinterpret_cast<float*>(result.bytes.data());  // [rows x cols] W_hat
            quantize_rows_dequantized(scheme, w, cols, begin, end, absmax, out);
            err.add(w + begin * cols, out + begin * cols, (end - begin) * cols);
            return;
        }
        std::vector<float>& row_hat = scratch[static_cast<size_t>(thread)];
        row_hat.resize(static_cast<size_t>(cols));
        for (int64_t r = begin; r < end; ++r) {
            uint8_t* packed = result.bytes.data() + static_cast<uint64_t>(r) * row_bytes;
            quantize_row_reference(result.type, w + r * cols, packed, cols);
            dequantize_row(result.type, packed, row_hat.data(), cols);
            err.add(w + r * cols, row_hat.data(), cols);
        }
    });
    result.error = combine_errors(errors);
    return result;
}

}  // namespace inferscope
