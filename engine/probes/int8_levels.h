#pragma once
// INT8 activation analysis of one captured tensor: how many of the INT8 codes each
// dimension actually uses, and how large the quantization error is, under a single
// tensor-wide scale, under that scale after setting the top-k dimensions aside (kept in
// floating point, as LLM.int8() does), and under per-token and per-channel scales.
//
// Quantization is symmetric absmax (engine/formats/int8_absmax.h): 255 codes (-127..127)
// are available to each dimension.
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/formats/int8_absmax.h"

namespace inferscope {

enum class Int8Scheme {
    PerTensor,              // one scale for the whole tensor
    PerTensorExcludingTop,  // one scale for all but the top-k dimensions, which stay in float
    PerToken,               // one scale per row
    PerChannel,             // one scale per column
};

std::string_view int8_scheme_name(Int8Scheme scheme);  // for people: "per-tensor, top-k kept in float"
std::string_view int8_scheme_key(Int8Scheme scheme);   // for JSON: "per_tensor_excluding_top"

struct Int8SchemeResult {
    Int8Scheme scheme = Int8Scheme::PerTensor;
    std::vector<float> scales;     // [1], [1], [n_tokens] or [n_dims]
    std::vector<int> levels_used;  // [n_dims] distinct codes per dimension; 0 for a dimension kept in float
    double relative_error = 0;     // ||H - H_hat||_F / ||H||_F over the whole tensor
    double max_abs_error = 0;      // max |h - h_hat|
    double median_levels_used = 0; // over the quantized dimensions
};

struct Int8Analysis {
    int64_t n_tokens = 0;
    int64_t n_dims = 0;
    std::vector<float> dim_max_abs;  // [n_dims]
    std::vector<int> excluded_dims;  // the top-k dimensions by max |h|, largest first
    float tensor_max_abs = 0;        // max|H|
    float tensor_scale = 0;          // max|H| / 127
    float reduced_scale = 0;         // max over the remaining dimensions / 127
    double scale_shrink_ratio = 0;   // tensor_scale / reduced_scale (0 when reduced_scale is 0)
    std::vector<Int8SchemeResult> schemes;  // in Int8Scheme order

    const Int8SchemeResult& scheme(Int8Scheme s) const { return schemes[static_cast<size_t>(s)]; }
};

// values: [n_tokens x n_dims], row-major. exclude_top_k: 0 <= k < n_dims. InvalidArgument
// for an empty tensor, a size mismatch, a bad k or a non-finite value.
Int8Analysis analyze_int8(std::span<const float> values, int64_t n_tokens, int64_t n_dims, int exclude_top_k);

}  // namespace inferscope
