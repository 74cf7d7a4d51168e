#pragma once
// Matrix products of activations with weights stored in any supported GGUF format,
// computed directly from the mapped weight data.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/model/model.h"

namespace inferscope {

// Reusable buffers for matmul, kept by the caller so a forward pass allocates nothing
// after its first step.
struct MatmulScratch {
    // The current input in each dot encoding it was needed in; buffers are kept between
    // calls (`current` marks the ones holding this call's input).
    struct EncodedInput {
        GgmlType type;
        std::vector<uint8_t> bytes;
        bool current;
    };
    std::vector<EncodedInput> encoded_inputs;
    std::vector<float> dequantized;      // weight rows dequantized for the BLAS fallback
    // The current input rounded to F16 or BF16 and widened to F32 (half kernel and BLAS
    // fallback), per type, kept between calls like encoded_inputs.
    struct RoundedInput {
        GgmlType type;
        std::vector<float> values;       // [n x cols]
        std::vector<float> interleaved;  // empty, or values interleaved by 16 rows (half_gemm.h)
        bool current;
    };
    std::vector<RoundedInput> rounded_inputs;
};

// y[n x w.rows] = x[n x w.cols] * W^T, rows of x and y contiguous, weight rows split across
// the pool's threads.
//
// Numerics follow llama.cpp's CPU backend: F32 weights use F32 products (OpenBLAS);
// F16/BF16 weights see the input rounded to F16/BF16; quantized weights see the input
// quantized to the type's companion format (Q8_0, Q8_1, Q8_K) and integer block dot
// products. The result therefore matches llama.cpp's up to summation order. The kernels are
// those of the active instruction-set family (engine/backend/cpu/cpu_features.h).
void matmul(const WeightMatrix& w, const float* x, int64_t n, float* y, ThreadPool& pool, MatmulScratch& scratch);

// One product of several matrices with the same input (q/k/v, gate/up): the input is
// encoded once per dot encoding and the rows of all matrices share one parallel loop.
struct MatmulOutput {
    const WeightMatrix* w;
    float* y;  // [n x w->rows]
};
void matmul_shared_input(std::span<const MatmulOutput> outputs, const float* x, int64_t n, ThreadPool& pool,
                         MatmulScratch& scratch);

}  // namespace inferscope
