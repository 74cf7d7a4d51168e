#include "engine/quant/codecs.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"

namespace inferscope {
namespace {

float absmax_of(const float* w, int64_t n) {
    float m = 0.0f;
    for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(w[i]));
    return m;
}

// Inverse of the standard normal CDF by bisection in double: slow, exact to double
// precision, and run once for 15 values.
double normal_quantile(double p) {
    double lo = -40.0;
    double hi = 40.0;
    for (int i = 0; i < 200; ++i) {
        const double mid = 0.5 * (lo + hi);
        if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return 0.5 * (lo + hi);
}

// QLoRA's NF4: the outermost probability is offset = 1 - (1/32 + 1/30) / 2, so that the
// extreme levels land on +-1 after normalisation without an infinite quantile. Eight
// positive quantiles over [offset, 0.5) and seven negative ones over [offset, 0.5) make the
// code asymmetric with an exact zero.
std::array<float, 16> build_nf4_levels() {
    const double offset = 1.0 - 0.5 * (1.0 / 32.0 + 1.0 / 30.0);
    std::array<double, 16> levels{};
    int next = 0;
    for (int i = 0; i < 8; ++i) levels[next++] = normal_quantile(offset + (0.5 - offset) * i / 8.0);
    for (int i = 0; i < 7; ++i) levels[next++] = -normal_quantile(offset + (0.5 - offset) * i / 7.0);
    levels[next] = 0.0;
    std::sort(levels.begin(), levels.end());
    const double top = levels[15];
    std::array<float, 16> normalised{};
    for (int i = 0; i < 16; ++i) normalised[static_cast<size_t>(i)] = static_cast<float>(levels[static_cast<size_t>(i)] / top);
    return normalised;
}

// Midpoints between consecutive levels: x above midpoint i is closer to level i + 1.
std::array<float, 15> build_nf4_midpoints() {
    const auto& levels = nf4_levels();
    std::array<float, 15> mid{};
    for (size_t i = 0; i < mid.size(); ++i) mid[i] = 0.5f * (levels[i] + levels[i + 1]);
    return mid;
}

void check_codec_scheme(const QuantScheme& scheme, int64_t rows, int64_t cols) {
    if (scheme.family == SchemeFamily::Gguf) {
        throw InvalidArgument(scheme.name() + " is a GGUF block format; it has no INT/NF4 codes");
    }
    scheme.check_shape(rows, cols, "matrix");
}

// Length of the runs that share one scale inside a row (the whole row for row and tensor
// granularity).
int64_t run_length(const QuantScheme& scheme, int64_t cols) {
    if (scheme.family == SchemeFamily::Nf4 || scheme.granularity == Granularity::Group) return scheme.block;
    return cols;
}

}  // namespace

int int_qmax(int bits) { return (1 << (bits - 1)) - 1; }

float int_quantize_run(const float* w, int64_t n, float absmax, int bits, ScaleFormat format, int8_t* codes,
                       float* dequantized) {
    const int qmax = int_qmax(bits);
    const float scale = absmax / static_cast<float>(qmax);
    const float stored = stored_scale(scale, format);
    const float lowest = static_cast<float>(-qmax - 1);
    const float highest = static_cast<float>(qmax);
    for (int64_t i = 0; i < n; ++i) {
        // An all-zero run has scale 0: every code is 0. The integer code (never -0.0) is what
        // W_hat multiplies, so decoding stored codes gives the same bits.
        const int code = scale > 0.0f ? static_cast<int>(std::clamp(std::nearbyint(w[i] / scale), lowest, highest)) : 0;
        if (codes != nullptr) codes[i] = static_cast<int8_t>(code);
        if (dequantized != nullptr) dequantized[i] = static_cast<float>(code) * stored;
    }
    return stored;
}

const std::array<float, 16>& nf4_levels() {
    static const std::array<float, 16> levels = build_nf4_levels();
    return levels;
}

uint8_t nf4_nearest_level(float x) {
    static const std::array<float, 15> midpoints = build_nf4_midpoints();
    // Levels are few: count the midpoints below x (branch-free, vectorizable).
    uint8_t index = 0;
    for (float m : midpoints) index = static_cast<uint8_t>(index + (x >= m ? 1 : 0));
    return index;
}

float nf4_quantize_block(const float* w, int64_t n, ScaleFormat format, uint8_t* indices, float* dequantized) {
    const float absmax = absmax_of(w, n);
    const float stored = stored_scale(absmax, format);
    const auto& levels = nf4_levels();
    const float inverse = absmax > 0.0f ? 1.0f / absmax : 0.0f;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t index = nf4_nearest_level(w[i] * inverse);
        if (indices != nullptr) indices[i] = index;
        if (dequantized != nullptr) dequantized[i] = levels[index] * stored;
    }
    return stored;
}

EncodedMatrix encode_matrix(const QuantScheme& scheme, const float* w, int64_t rows, int64_t cols) {
    check_codec_scheme(scheme, rows, cols);
    EncodedMatrix encoded;
    encoded.codes.resize(static_cast<size_t>(rows * cols));
    const float tensor_absmax = absmax_of(w, rows * cols);
    const int64_t run = run_length(scheme, cols);
    for (int64_t start = 0; start < rows * cols; start += run) {
        const float* values = w + start;
        int8_t* codes = encoded.codes.data() + start;
        if (scheme.family == SchemeFamily::Nf4) {
            encoded.scales.push_back(
                nf4_quantize_block(values, run, scheme.scale_format, reinterpret_cast<uint8_t*>(codes), nullptr));
            continue;
        }
        const bool per_tensor = scheme.granularity == Granularity::Tensor;
        const float stored = int_quantize_run(values, run, per_tensor ? tensor_absmax : absmax_of(values, run),
                                              scheme.bits, scheme.scale_format, codes, nullptr);
        if (!per_tensor || encoded.scales.empty()) encoded.scales.push_back(stored);
    }
    return encoded;
}

std::vector<float> decode_matrix(const QuantScheme& scheme, const EncodedMatrix& encoded, int64_t rows, int64_t cols) {
    check_codec_scheme(scheme, rows, cols);
    if (encoded.codes.size() != static_cast<size_t>(rows * cols) ||
        encoded.scales.size() != static_cast<size_t>(scheme.scale_count(rows, cols))) {
        throw InvalidArgument("decode_matrix: " + scheme.name() + " codes or scales do not match a " +
                              std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
    }
    std::vector<float> w(encoded.codes.size());
    const int64_t run = run_length(scheme, cols);
    const bool per_tensor = scheme.family == SchemeFamily::Int && scheme.granularity == Granularity::Tensor;
    for (size_t i = 0; i < w.size(); ++i) {
        const float scale = encoded.scales[per_tensor ? 0 : i / static_cast<size_t>(run)];
        const int8_t code = encoded.codes[i];
        w[i] = scheme.family == SchemeFamily::Nf4 ? nf4_levels()[static_cast<uint8_t>(code)] * scale
                                                  : static_cast<float>(code) * scale;
    }
    return w;
}

void quantize_rows_dequantized(const QuantScheme& scheme, const float* w, int64_t cols, int64_t row_begin,
                               int64_t row_end, float tensor_absmax, float* out) {
    const int64_t run = run_length(scheme, cols);
    for (int64_t start = row_begin * cols; start < row_end * cols; start += run) {
        if (scheme.family == SchemeFamily::Nf4) {
            nf4_quantize_block(w + start, run, scheme.scale_format, nullptr, out + start);
            continue;
        }
        const float absmax = scheme.granularity == Granularity::Tensor ? tensor_absmax : absmax_of(w + start, run);
        int_quantize_run(w + start, run, absmax, scheme.bits, scheme.scale_format, nullptr, out + start);
    }
}

}  // namespace inferscope
