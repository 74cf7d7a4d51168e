#pragma once
// Matrix products of activations with weights stored in any supported GGUF format,
// computed directly from the mapped weight data.
#include <cstdint>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/model/model.h"

namespace inferscope {

// Reusable buffers for matmul, kept by the caller so a forward pass allocates nothing
// after its first step.
struct MatmulScratch {
    std::vector<uint8_t> encoded_input;  // activations in the weight type's dot encoding
    std::vector<float> dequantized;      // a tile of dequantized weight rows
    std::vector<float> rounded_input;    // activations rounded to F16/BF16
};

// y[n x w.rows] = x[n x w.cols] * W^T, rows of x and y contiguous.
//
// Numerics follow llama.cpp's CPU backend: F32 weights use F32 products (OpenBLAS);
// F16/BF16 weights see the input rounded to F16/BF16; quantized weights see the input
// quantized to the type's companion format (Q8_0, Q8_1, Q8_K) and integer block dot
// products. The result therefore matches llama.cpp's up to summation order.
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool, MatmulScratch& scratch);

}  // namespace inferscope
