#include "engine/probes/int8_levels.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <string>

#include "engine/core/error.h"
#include "engine/probes/outlier_stats.h"

namespace inferscope {

std::string_view int8_scheme_name(Int8Scheme scheme) {
    switch (scheme) {
        case Int8Scheme::PerTensor: return "per-tensor";
        case Int8Scheme::PerTensorExcludingTop: return "per-tensor, top-k kept in float";
        case Int8Scheme::PerToken: return "per-token";
        case Int8Scheme::PerChannel: return "per-channel";
    }
    return "?";
}

std::string_view int8_scheme_key(Int8Scheme scheme) {
    switch (scheme) {
        case Int8Scheme::PerTensor: return "per_tensor";
        case Int8Scheme::PerTensorExcludingTop: return "per_tensor_excluding_top";
        case Int8Scheme::PerToken: return "per_token";
        case Int8Scheme::PerChannel: return "per_channel";
    }
    return "?";
}

namespace {

struct TensorView {
    std::span<const float> values;  // [n_tokens x n_dims]
    int64_t n_tokens = 0;
    int64_t n_dims = 0;
    float at(int64_t t, int64_t d) const { return values[static_cast<size_t>(t * n_dims + d)]; }
};

void validate_input(std::span<const float> values, int64_t n_tokens, int64_t n_dims, int exclude_top_k) {
    if (n_tokens <= 0 || n_dims <= 0) {
        throw InvalidArgument("INT8 analysis needs a non-empty tensor, got " + std::to_string(n_tokens) + " x " +
                              std::to_string(n_dims));
    }
    if (values.size() != static_cast<size_t>(n_tokens * n_dims)) {
        throw InvalidArgument("INT8 analysis got " + std::to_string(values.size()) + " values for a " +
                              std::to_string(n_tokens) + " x " + std::to_string(n_dims) + " tensor");
    }
    if (exclude_top_k < 0 || exclude_top_k >= n_dims) {
        throw InvalidArgument("cannot set aside the top " + std::to_string(exclude_top_k) + " of " + std::to_string(n_dims) +
                              " dimensions (need 0 <= k < dimensions)");
    }
    for (float v : values) {
        if (!std::isfinite(v)) throw InvalidArgument("INT8 analysis got a non-finite activation");
    }
}

// Quantizes every element with scale_of(token, dim) (dimensions with kept_in_float[d]
// are left exact) and counts the codes each dimension uses and the error.
template <typename ScaleOf>
void quantize_and_measure(const TensorView& h, const std::vector<bool>& kept_in_float, ScaleOf scale_of, Int8SchemeResult& out) {
    out.levels_used.assign(static_cast<size_t>(h.n_dims), 0);
    double error_sq = 0, norm_sq = 0;
    std::vector<float> quantized_levels;
    for (int64_t d = 0; d < h.n_dims; ++d) {
        const bool exact = kept_in_float[static_cast<size_t>(d)];
        std::bitset<2 * kInt8MaxCode + 1> codes_seen;
        for (int64_t t = 0; t < h.n_tokens; ++t) {
            const float v = h.at(t, d);
            norm_sq += static_cast<double>(v) * v;
            if (exact) continue;
            const float scale = scale_of(t, d);
            const int code = int8_code(v, scale);
            codes_seen.set(static_cast<size_t>(code + kInt8MaxCode));
            const double error = static_cast<double>(v) - static_cast<double>(code) * scale;
            error_sq += error * error;
            out.max_abs_error = std::max(out.max_abs_error, std::abs(error));
        }
        if (exact) continue;
        out.levels_used[static_cast<size_t>(d)] = static_cast<int>(codes_seen.count());
        quantized_levels.push_back(static_cast<float>(codes_seen.count()));
    }
    out.relative_error = norm_sq > 0 ? std::sqrt(error_sq / norm_sq) : 0.0;
    out.median_levels_used = median(quantized_levels);
}

std::vector<float> row_max_abs(const TensorView& h) {
    std::vector<float> maxima(static_cast<size_t>(h.n_tokens), 0.0f);  // [n_tokens]
    for (int64_t t = 0; t < h.n_tokens; ++t) {
        for (int64_t d = 0; d < h.n_dims; ++d) maxima[static_cast<size_t>(t)] = std::max(maxima[static_cast<size_t>(t)], std::abs(h.at(t, d)));
    }
    return maxima;
}

}  // namespace

Int8Analysis analyze_int8(std::span<const float> values, int64_t n_tokens, int64_t n_dims, int exclude_top_k) {
    validate_input(values, n_tokens, n_dims, exclude_top_k);
    const TensorView h{values, n_tokens, n_dims};
    Int8Analysis a;
    a.n_tokens = n_tokens;
    a.n_dims = n_dims;
    DimensionAbsMax column_max(n_dims);
    column_max.add_rows(values.data(), n_tokens, n_dims);
    a.dim_max_abs.assign(column_max.max_abs().begin(), column_max.max_abs().end());

    std::vector<bool> none_kept(static_cast<size_t>(n_dims), false);
    std::vector<bool> top_kept(static_cast<size_t>(n_dims), false);
    for (const DimensionValue& top : top_dimensions(a.dim_max_abs, exclude_top_k)) {
        a.excluded_dims.push_back(top.dim);
        top_kept[static_cast<size_t>(top.dim)] = true;
    }
    float tensor_max = 0, remaining_max = 0;
    for (int64_t d = 0; d < n_dims; ++d) {
        const float m = a.dim_max_abs[static_cast<size_t>(d)];
        tensor_max = std::max(tensor_max, m);
        if (!top_kept[static_cast<size_t>(d)]) remaining_max = std::max(remaining_max, m);
    }
    a.tensor_max_abs = tensor_max;
    a.tensor_scale = int8_scale(tensor_max);
    a.reduced_scale = int8_scale(remaining_max);
    a.scale_shrink_ratio = a.reduced_scale > 0 ? static_cast<double>(a.tensor_scale) / a.reduced_scale : 0.0;

    a.schemes.resize(4);
    Int8SchemeResult& per_tensor = a.schemes[static_cast<size_t>(Int8Scheme::PerTensor)];
    per_tensor.scheme = Int8Scheme::PerTensor;
    per_tensor.scales = {a.tensor_scale};
    quantize_and_measure(h, none_kept, [&](int64_t, int64_t) { return a.tensor_scale; }, per_tensor);

    Int8SchemeResult& reduced = a.schemes[static_cast<size_t>(Int8Scheme::PerTensorExcludingTop)];
    reduced.scheme = Int8Scheme::PerTensorExcludingTop;
    reduced.scales = {a.reduced_scale};
    quantize_and_measure(h, top_kept, [&](int64_t, int64_t) { return a.reduced_scale; }, reduced);

    Int8SchemeResult& per_token = a.schemes[static_cast<size_t>(Int8Scheme::PerToken)];
    per_token.scheme = Int8Scheme::PerToken;
    for (float m : row_max_abs(h)) per_token.scales.push_back(int8_scale(m));
    quantize_and_measure(h, none_kept, [&](int64_t t, int64_t) { return per_token.scales[static_cast<size_t>(t)]; }, per_token);

    Int8SchemeResult& per_channel = a.schemes[static_cast<size_t>(Int8Scheme::PerChannel)];
    per_channel.scheme = Int8Scheme::PerChannel;
    for (float m : a.dim_max_abs) per_channel.scales.push_back(int8_scale(m));
    quantize_and_measure(h, none_kept, [&](int64_t, int64_t d) { return per_channel.scales[static_cast<size_t>(d)]; }, per_channel);
    return a;
}

}  // namespace inferscope
