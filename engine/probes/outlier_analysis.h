#pragma once
// The activation-outlier experiment: run a prompt through a session with a probe on one
// tensor kind of every block, reduce each layer to its per-dimension max |h| as the
// tensors stream by, and capture one chosen layer whole for the INT8 analysis.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/backend/batch.h"
#include "engine/probes/activation_probe.h"
#include "engine/probes/int8_levels.h"
#include "engine/probes/outlier_stats.h"

namespace inferscope {

class InferenceSession;

// Streaming reducer that keeps every row of one tensor (per-token values of one layer):
// [n_tokens x n_dims], in the order the tokens were computed.
class TensorCapture {
public:
    explicit TensorCapture(int64_t n_dims) : n_dims_(n_dims) {}
    // InvalidArgument when the width differs from n_dims.
    void add_rows(const float* rows, int64_t n_rows, int64_t n_dims, std::span<const BatchToken> tokens);

    std::span<const float> values() const { return values_; }
    std::span<const int32_t> positions() const { return positions_; }  // [n_tokens]
    int64_t n_tokens() const { return static_cast<int64_t>(positions_.size()); }
    int64_t n_dims() const { return n_dims_; }

private:
    int64_t n_dims_;
    std::vector<float> values_;       // [n_tokens x n_dims]
    std::vector<int32_t> positions_;  // [n_tokens]
};

struct OutlierAnalysisOptions {
    std::string tensor = "resid";  // a block_tensor_kinds() entry
    int top_k = 4;                 // outlier dimensions per layer, also set aside in the INT8 analysis
    int int8_layer = -1;           // layer captured for the INT8 analysis; -1: the middle layer
    int chunk_tokens = 512;        // prompt tokens per forward pass (the reducers stream across passes)
};

struct OutlierReport {
    std::string tensor;
    int64_t n_tokens = 0;
    int n_dims = 0;
    int top_k = 0;
    std::vector<LayerOutlierSummary> layers;  // one per block, in order
    std::vector<DimensionPersistence> persistence;
    int int8_layer = 0;
    Int8Analysis int8;
};

// Runs `prompt` as a new sequence of `session` (freed afterwards) with a probe attached
// only for this analysis. InvalidArgument for an unknown tensor, a layer out of range,
// top_k outside [1, dimensions), an empty prompt, a prompt longer than the context or a
// non-positive chunk size.
OutlierReport analyze_outliers(InferenceSession& session, std::span<const TokenId> prompt,
                               const OutlierAnalysisOptions& options);

}  // namespace inferscope
