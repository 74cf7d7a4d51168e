#pragma once
// The INT-b and NF4 codecs: integer codes and scales of runs of weights, and the matrix-level
// encoders that expose them (for tests and inspection). GGUF schemes use the ggml encoders in
// engine/formats instead.
//
// INT-b (normative): qmax = 2^(b-1) - 1, scale = max|W| / qmax, Wq = clamp(round(W / scale),
// -qmax - 1, qmax), rounding half to even; W_hat = Wq x stored(scale), where stored() is the
// scale after a round trip through its storage format (f16 by default). Codes come from the
// exact scale, as ggml does, so a stored scale never clips a code.
//
// NF4: 16 levels at quantiles of the standard normal, normalised to [-1, 1] (QLoRA's
// construction: 8 positive and 7 negative quantiles plus an exact zero); per block of
// consecutive weights of a row, x = W / absmax is coded as the nearest level and
// W_hat = level x stored(absmax).
#include <array>
#include <cstdint>
#include <vector>

#include "engine/quant/scheme.h"

namespace inferscope {

int int_qmax(int bits);  // 2^(bits-1) - 1

// Codes `n` weights that share one scale derived from `absmax` (max|W| of the run that owns
// the scale, which may be larger than this run's). Writes codes [n] and/or dequantized
// values [n] (either may be null); returns the stored scale.
float int_quantize_run(const float* w, int64_t n, float absmax, int bits, ScaleFormat format, int8_t* codes,
                       float* dequantized);

// The 16 NF4 levels in increasing order; levels[7] == 0, levels[0] == -1, levels[15] == 1.
const std::array<float, 16>& nf4_levels();
// Index of the level nearest to x (x in [-1, 1]; ties go to the upper level).
uint8_t nf4_nearest_level(float x);
// Codes one block of `n` weights; writes indices [n] and/or dequantized values [n]; returns
// the stored absmax.
float nf4_quantize_block(const float* w, int64_t n, ScaleFormat format, uint8_t* indices, float* dequantized);

// A whole INT or NF4 matrix, encoded. Scales are in row-major group order: one for
// `tensor`, one per row for `row`, rows x (cols / block) for groups and NF4 blocks.
struct EncodedMatrix {
    std::vector<int8_t> codes;   // [rows x cols]: INT codes, or NF4 level indices 0..15
    std::vector<float> scales;   // stored scales (NF4: stored absmax per block)
};

// w is [rows x cols] row-major. InvalidArgument for GGUF schemes or shapes that do not fit.
EncodedMatrix encode_matrix(const QuantScheme& scheme, const float* w, int64_t rows, int64_t cols);
std::vector<float> decode_matrix(const QuantScheme& scheme, const EncodedMatrix& encoded, int64_t rows, int64_t cols);

// W_hat for rows [row_begin, row_end) of an INT or NF4 matrix, written to out (same layout
// as w). `tensor_absmax` is max|W| over the whole matrix (used by `tensor` granularity).
void quantize_rows_dequantized(const QuantScheme& scheme, const float* w, int64_t cols, int64_t row_begin,
                               int64_t row_end, float tensor_absmax, float* out);

}  // namespace inferscope
