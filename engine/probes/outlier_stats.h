#pragma once
// Per-dimension outlier statistics of activations: the streaming per-dimension max |h|
// over tokens, and what is derived from it per layer (mean and median over dimensions,
// the top-k dimensions, a log2-binned histogram) and across layers (persistence of the
// top dimensions).
#include <cstdint>
#include <span>
#include <vector>

namespace inferscope {

// Streaming reducer: max |h| of each dimension over every token it has seen. Its state is
// one float per dimension, however many tokens pass through.
class DimensionAbsMax {
public:
    explicit DimensionAbsMax(int64_t n_dims);

    // rows: [n_rows x n_dims], row-major, one row per token. InvalidArgument when the
    // width differs from n_dims.
    void add_rows(const float* rows, int64_t n_rows, int64_t n_dims);

    std::span<const float> max_abs() const { return max_abs_; }  // [n_dims]
    int64_t n_tokens() const { return n_tokens_; }
    int64_t n_dims() const { return static_cast<int64_t>(max_abs_.size()); }

private:
    std::vector<float> max_abs_;  // [n_dims]
    int64_t n_tokens_ = 0;
};

struct DimensionValue {
    int dim = 0;
    float value = 0;
};

// The k largest values with their dimensions, largest first, ties by lower dimension;
// fewer than k when there are fewer values.
std::vector<DimensionValue> top_dimensions(std::span<const float> values, int k);

// Median of the values (the mean of the two middle ones for an even count); 0 when empty.
double median(std::span<const float> values);

// One bin of the log2 histogram: [lower, upper), counting the values inside.
struct Log2Bin {
    double lower = 0;
    double upper = 0;
    int64_t count = 0;
};

// Bins [0,1), [1,2), [2,4), [4,8), ... up to the bin holding the largest value, empty bins
// kept (a gap of empty octaves between the bulk and an outlier is the point of the figure).
// InvalidArgument for a negative or non-finite value.
std::vector<Log2Bin> log2_histogram(std::span<const float> values);

struct LayerOutlierSummary {
    int layer = 0;
    int64_t n_tokens = 0;
    std::vector<float> dim_max_abs;  // [n_dims] max |h| over tokens
    double mean_dim_max_abs = 0;     // over dimensions
    double median_dim_max_abs = 0;   // over dimensions
    std::vector<DimensionValue> top;
    std::vector<Log2Bin> histogram;
};

LayerOutlierSummary summarize_layer(int layer, const DimensionAbsMax& reducer, int top_k);

// The k dimensions whose max |h| over every layer is largest, largest first (ties by lower
// dimension), each with that largest value: the rows of a heat map across layers.
// InvalidArgument when the layers' widths differ.
std::vector<DimensionValue> top_dimensions_across_layers(std::span<const LayerOutlierSummary> layers, int k);

// In which layers a dimension is among that layer's top-k.
struct DimensionPersistence {
    int dim = 0;
    std::vector<int> layers;  // ascending
};

// Every dimension that is in at least one layer's top list, the most persistent first
// (ties by lower dimension).
std::vector<DimensionPersistence> top_dimension_persistence(std::span<const LayerOutlierSummary> layers);

}  // namespace inferscope
