#pragma once
// The input of a linear layer as INT8 activation kernels would see it
// (engine/backend/activation_precision.h): quantized with the mode's scales and dequantized,
// LLM.int8()'s outlier columns left exact.
#include <cstdint>
#include <vector>

#include "engine/backend/activation_precision.h"

namespace inferscope {

// Reusable buffers, kept by the caller so a forward pass allocates nothing after its first step.
struct ActivationQuantScratch {
    std::vector<float> values;         // [n x cols] the input as the product sees it
    std::vector<uint8_t> kept_in_f32;  // [cols] 1 for a column LLM.int8() keeps in F32
    int64_t outlier_columns = 0;       // columns kept in F32 by the last call (0 unless llm.int8)
};

// x: [n x cols], row-major, one row per token. Returns x itself when the precision is F32
// (nothing is computed or copied), else scratch.values.data(). For llm.int8 the product
// x_hat W^T equals X_outliers W_outliers^T + dequant(Xq_rest) W_rest^T, LLM.int8()'s sum of
// the F32 and the INT8 partial products, and the outlier columns of x_hat are x's bit for bit.
const float* quantize_activations(const ActivationPrecision& precision, const float* x, int64_t n, int64_t cols,
                                  ActivationQuantScratch& scratch);

}  // namespace inferscope
