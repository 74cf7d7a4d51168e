#include "engine/probes/outlier_stats.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>

#include "engine/core/error.h"

namespace inferscope {

DimensionAbsMax::DimensionAbsMax(int64_t n_dims) {
    if (n_dims <= 0) throw InvalidArgument("a per-dimension reducer needs at least one dimension, got " + std::to_string(n_dims));
    max_abs_.assign(static_cast<size_t>(n_dims), 0.0f);
}

void DimensionAbsMax::add_rows(const float* rows, int64_t n_rows, int64_t n_dims) {
    if (n_dims != this->n_dims()) {
        throw InvalidArgument("tensor has " + std::to_string(n_dims) + " columns, the reducer expects " +
                              std::to_string(this->n_dims()));
    }
    const auto width = static_cast<size_t>(n_dims);
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* row = rows + static_cast<size_t>(r) * width;
        for (size_t d = 0; d < width; ++d) max_abs_[d] = std::max(max_abs_[d], std::abs(row[d]));
    }
    n_tokens_ += n_rows;
}

std::vector<DimensionValue> top_dimensions(std::span<const float> values, int k) {
    std::vector<int> dims(values.size());
    std::iota(dims.begin(), dims.end(), 0);
    const size_t keep = std::min(dims.size(), static_cast<size_t>(std::max(k, 0)));
    std::partial_sort(dims.begin(), dims.begin() + static_cast<std::ptrdiff_t>(keep), dims.end(), [&](int a, int b) {
        const float va = values[static_cast<size_t>(a)];
        const float vb = values[static_cast<size_t>(b)];
        return va != vb ? va > vb : a < b;
    });
    std::vector<DimensionValue> top;
    for (size_t i = 0; i < keep; ++i) top.push_back({dims[i], values[static_cast<size_t>(dims[i])]});
    return top;
}

double median(std::span<const float> values) {
    if (values.empty()) return 0;
    std::vector<float> sorted(values.begin(), values.end());
    std::sort(sorted.begin(), sorted.end());
    const size_t mid = sorted.size() / 2;
    if (sorted.size() % 2 == 1) return sorted[mid];
    return (static_cast<double>(sorted[mid - 1]) + sorted[mid]) / 2.0;
}

namespace {

// Bin 0 is [0,1); bin b >= 1 is [2^(b-1), 2^b). frexp gives v = m * 2^e with m in
// [0.5, 1), so a v >= 1 lies in [2^(e-1), 2^e): bin e, exactly, with no log rounding.
size_t log2_bin_index(float v) {
    if (v < 1.0f) return 0;
    int exponent = 0;
    std::frexp(v, &exponent);
    return static_cast<size_t>(exponent);
}

}  // namespace

std::vector<Log2Bin> log2_histogram(std::span<const float> values) {
    std::vector<Log2Bin> bins(1, Log2Bin{0.0, 1.0, 0});
    for (float v : values) {
        if (!std::isfinite(v) || v < 0) {
            throw InvalidArgument("log2 histogram of magnitudes got " + std::to_string(v) + " (needs finite values >= 0)");
        }
        const size_t bin = log2_bin_index(v);
        while (bins.size() <= bin) {
            const double lower = std::ldexp(1.0, static_cast<int>(bins.size()) - 1);
            bins.push_back({lower, 2 * lower, 0});
        }
        ++bins[bin].count;
    }
    return bins;
}

LayerOutlierSummary summarize_layer(int layer, const DimensionAbsMax& reducer, int top_k) {
    LayerOutlierSummary s;
    s.layer = layer;
    s.n_tokens = reducer.n_tokens();
    s.dim_max_abs.assign(reducer.max_abs().begin(), reducer.max_abs().end());
    double sum = 0;
    for (float v : s.dim_max_abs) sum += v;
    s.mean_dim_max_abs = sum / static_cast<double>(s.dim_max_abs.size());
    s.median_dim_max_abs = median(s.dim_max_abs);
    s.top = top_dimensions(s.dim_max_abs, top_k);
    s.histogram = log2_histogram(s.dim_max_abs);
    return s;
}

std::vector<DimensionValue> top_dimensions_across_layers(std::span<const LayerOutlierSummary> layers, int k) {
    if (layers.empty()) return {};
    std::vector<float> max_over_layers(layers.front().dim_max_abs.size(), 0.0f);  // [n_dims]
    for (const LayerOutlierSummary& layer : layers) {
        if (layer.dim_max_abs.size() != max_over_layers.size()) {
            throw InvalidArgument("layer " + std::to_string(layer.layer) + " has " + std::to_string(layer.dim_max_abs.size()) +
                                  " dimensions, layer " + std::to_string(layers.front().layer) + " has " +
                                  std::to_string(max_over_layers.size()));
        }
        for (size_t d = 0; d < max_over_layers.size(); ++d) max_over_layers[d] = std::max(max_over_layers[d], layer.dim_max_abs[d]);
    }
    return top_dimensions(max_over_layers, k);
}

std::vector<DimensionPersistence> top_dimension_persistence(std::span<const LayerOutlierSummary> layers) {
    std::map<int, std::vector<int>> layers_by_dim;
    for (const LayerOutlierSummary& layer : layers) {
        for (const DimensionValue& top : layer.top) layers_by_dim[top.dim].push_back(layer.layer);
    }
    std::vector<DimensionPersistence> result;
    for (auto& [dim, in_layers] : layers_by_dim) {
        std::sort(in_layers.begin(), in_layers.end());
        result.push_back({dim, std::move(in_layers)});
    }
    std::stable_sort(result.begin(), result.end(), [](const DimensionPersistence& a, const DimensionPersistence& b) {
        return a.layers.size() > b.layers.size();
    });
    return result;
}

}  // namespace inferscope
