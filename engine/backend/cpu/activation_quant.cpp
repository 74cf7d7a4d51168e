#include "engine/backend/cpu/activation_quant.h"

#include <algorithm>
#include <cmath>

#include "engine/formats/int8_absmax.h"

namespace inferscope {
namespace {

// max |v| over the elements whose column is not kept in F32 (`kept` null: every element).
float max_abs(const float* v, int64_t count, const uint8_t* kept) {
    float m = 0.0f;
    for (int64_t i = 0; i < count; ++i) {
        if (kept == nullptr || kept[i] == 0) m = std::max(m, std::fabs(v[i]));
    }
    return m;
}

// One row through INT8 and back; columns kept in F32 (`kept` non-null) are copied exactly.
void quantize_row(const float* x, int64_t cols, float scale, const uint8_t* kept, float* out) {
    for (int64_t c = 0; c < cols; ++c) {
        out[c] = kept != nullptr && kept[c] != 0 ? x[c] : static_cast<float>(int8_code(x[c], scale)) * scale;
    }
}

// LLM.int8()'s outlier columns: those where any row has |x| above the threshold.
int64_t mark_outlier_columns(const float* x, int64_t n, int64_t cols, float threshold, std::vector<uint8_t>& kept) {
    kept.assign(static_cast<size_t>(cols), 0);
    for (int64_t r = 0; r < n; ++r) {
        const float* row = x + r * cols;
        for (int64_t c = 0; c < cols; ++c) kept[static_cast<size_t>(c)] |= std::fabs(row[c]) > threshold ? 1 : 0;
    }
    return std::count(kept.begin(), kept.end(), uint8_t{1});
}

}  // namespace

const float* quantize_activations(const ActivationPrecision& precision, const float* x, int64_t n, int64_t cols,
                                  ActivationQuantScratch& scratch) {
    scratch.outlier_columns = 0;
    if (precision.is_f32() || n <= 0 || cols <= 0) return x;
    scratch.values.resize(static_cast<size_t>(n * cols));
    float* out = scratch.values.data();
    if (precision.mode == ActivationMode::Int8Tensor) {
        const float scale = int8_scale(max_abs(x, n * cols, nullptr));
        for (int64_t r = 0; r < n; ++r) quantize_row(x + r * cols, cols, scale, nullptr, out + r * cols);
        return out;
    }
    const uint8_t* kept = nullptr;
    if (precision.mode == ActivationMode::LlmInt8) {
        scratch.outlier_columns = mark_outlier_columns(x, n, cols, precision.outlier_threshold, scratch.kept_in_f32);
        kept = scratch.kept_in_f32.data();
    }
    // Per token (vector-wise): each row's scale covers only its quantized columns.
    for (int64_t r = 0; r < n; ++r) {
        const float* row = x + r * cols;
        quantize_row(row, cols, int8_scale(max_abs(row, cols, kept)), kept, out + r * cols);
    }
    return out;
}

}  // namespace inferscope
