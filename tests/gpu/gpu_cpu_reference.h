#pragma once
// CPU references shared by the Vulkan suites: random weights in any GGUF type, and the CPU
// backend's attention over a paged cache.
#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kv_storage.h"
#include "engine/formats/quant.h"
#include "engine/model/model.h"
#include "gpu/op_harness.h"
#include "gpu_test_util.h"

namespace inferscope::testing {

// A weight of `rows` x `cols` stored as `type`, row r quantized from row_values(r) (in
// order); `bytes` owns the data.
template <typename RowValues>
WeightMatrix weight_of_rows(GgmlType type, int64_t rows, int64_t cols, RowValues row_values, std::vector<uint8_t>& bytes) {
    WeightMatrix w;
    w.name = "test";
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(cols));
    bytes.assign(w.row_bytes * static_cast<uint64_t>(rows), 0);
    for (int64_t r = 0; r < rows; ++r) {
        const std::vector<float> row = row_values(r);
        quantize_row(type, row.data(), bytes.data() + static_cast<uint64_t>(r) * w.row_bytes, cols);
    }
    w.data = bytes.data();
    return w;
}

// A weight of `rows` x `cols` random values stored as `type`; `bytes` owns the data.
inline WeightMatrix random_weight(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng, std::vector<uint8_t>& bytes) {
    return weight_of_rows(
        type, rows, cols, [&](int64_t) { return random_floats(static_cast<size_t>(cols), rng); }, bytes);
}

// The CPU backend's attention (CpuBackend::attend_one) of the last n_query positions of one
// sequence, q holding their rows, over a cache filled in the order of `table`.
inline std::vector<float> cpu_attention(const std::vector<float>& q, const gpu::AttentionSequence& seq,
                                 const gpu::AttentionShape& shape) {
    const int kv_dim = shape.n_head_kv * shape.head_dim;
    const int q_dim = shape.n_head * shape.head_dim;
    const int n = static_cast<int>(seq.k.size()) / kv_dim;
    const int bt = shape.block_tokens;
    KvLayout layout;
    layout.n_layer = 1;
    layout.n_head_kv = shape.n_head_kv;
    layout.head_dim = shape.head_dim;
    layout.dtype = shape.kv_f16 ? KvDtype::F16 : KvDtype::F32;
    layout.block_tokens = bt;
    layout.n_blocks = *std::max_element(seq.block_table.begin(), seq.block_table.end()) + 1;
    CpuKvStorage kv(layout);
    for (int i = 0; i < n; ++i) {
        kv.write(0, seq.block_table[static_cast<size_t>(i / bt)], i % bt, &seq.k[static_cast<size_t>(i * kv_dim)],
                 &seq.v[static_cast<size_t>(i * kv_dim)]);
    }
    const AttentionKernels kernels = attention_kernels(active_cpu_isa());
    const int group = shape.n_head / shape.n_head_kv;
    std::vector<float> out(q.size(), 0.0f);
    for (int row = 0; row < seq.n_query; ++row) {
        const int pos = n - seq.n_query + row;
        const int first_visible = shape.window > 0 ? std::max(0, pos + 1 - shape.window) : 0;
        const int first_block = first_visible / bt;
        const int hidden = first_visible - first_block * bt;
        const int n_ctx = pos + 1 - first_block * bt;
        const int n_blocks = (n_ctx + bt - 1) / bt;
        for (int h = 0; h < shape.n_head_kv; ++h) {
            std::vector<const void*> k_parts, v_parts;
            for (int b = 0; b < n_blocks; ++b) {
                const int32_t block = seq.block_table[static_cast<size_t>(first_block + b)];
                k_parts.push_back(kv.k_part(0, block, h));
                v_parts.push_back(kv.v_part(0, block, h));
            }
            const float* qh = &q[static_cast<size_t>(row * q_dim + h * group * shape.head_dim)];
            float* oh = &out[static_cast<size_t>(row * q_dim + h * group * shape.head_dim)];
            std::vector<float> scores(static_cast<size_t>(group * n_ctx));
            if (shape.kv_f16) {
                kernels.scores_f16(qh, group, shape.head_dim, reinterpret_cast<const uint16_t* const*>(k_parts.data()), bt, n_ctx,
                                   shape.scale, scores.data(), n_ctx);
            } else {
                kernels.scores_f32(qh, group, shape.head_dim, reinterpret_cast<const float* const*>(k_parts.data()), bt, n_ctx,
                                   shape.scale, scores.data(), n_ctx);
            }
            for (int g = 0; g < group; ++g) {
                float* scores_row = scores.data() + static_cast<size_t>(g * n_ctx);
                kernels.softmax(scores_row + hidden, n_ctx - hidden);
                std::fill(scores_row, scores_row + hidden, 0.0f);
            }
            if (shape.kv_f16) {
                kernels.accumulate_f16(scores.data(), group, n_ctx, reinterpret_cast<const uint16_t* const*>(v_parts.data()), bt,
                                       shape.head_dim, n_ctx, shape.head_dim, oh);
            } else {
                kernels.accumulate_f32(scores.data(), group, n_ctx, reinterpret_cast<const float* const*>(v_parts.data()), bt,
                                       shape.head_dim, n_ctx, shape.head_dim, oh);
            }
        }
    }
    return out;
}

}  // namespace inferscope::testing
