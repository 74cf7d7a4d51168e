#pragma once
// Runs single operations of the Vulkan backend on host data, one submission each, so tests
// can compare every kernel with the CPU backend's (no Vulkan types here).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/rope.h"
#include "engine/model/model.h"

namespace inferscope::gpu {

// The q/k/v of `n` tokens entering record_qkv_prepare, and the paged cache it stores k and v in.
struct QkvPrepareShape {
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int block_tokens = 16;
    int n_blocks = 0;  // blocks in the cache
    float eps = 1e-6f;
    bool kv_f16 = false;
};
// q after the fused step, and both caches read back as floats in their layout.
struct QkvPrepared {
    std::vector<float> q, k_cache, v_cache;
};

// One sequence's attention: its tokens at positions 0..n-1, their K/V stored in the blocks
// of `block_table` (in that order), each token attending to itself and the tokens before
// it (the last `window` of them when window > 0).
struct AttentionShape {
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int block_tokens = 16;
    float scale = 1.0f;
    int window = 0;
    bool kv_f16 = false;
    std::vector<int32_t> block_table;
};

// One sequence of a batched attention: its K/V [length x n_head_kv x head_dim] stored at
// positions 0..length-1 in the blocks of `block_table` (in that order; tables of different
// sequences use different blocks), its last `n_query` positions querying.
struct AttentionSequence {
    std::vector<float> k, v;
    std::vector<int32_t> block_table;
    int n_query = 1;
};

class OpHarness {
public:
    // Error when no usable Vulkan device exists; `validation` as in VulkanBackendOptions;
    // max_workgroups_x > 0 lowers the launch limit along X (ContextOptions::max_workgroups_x);
    // `tuning` names the kernel_tuning_table() entry whose launch shapes to use (empty: the device's);
    // `integer_dot` overrides its matvec_integer_dot.
    explicit OpHarness(bool validation, uint32_t max_workgroups_x = 0, const std::string& tuning = "",
                       std::optional<bool> integer_dot = std::nullopt);
    // Whether encoded-input mat-vecs (Kernels::encodes_input) may run on integer dot products here, and whether the
    // product of `type` weights with rows of `cols` for n tokens does.
    bool integer_dot() const;
    bool matvec_uses_integer_dot(GgmlType type, int64_t cols, int64_t n) const;
    ~OpHarness();

    std::string device_name() const;
    int validation_errors() const;
    // The dispatches the last operation recorded.
    uint32_t last_dispatches() const;

    // y[n x w.rows] = x[n x w.cols] * W^T, the weights uploaded in parts of at most
    // `max_part_bytes` (0: the device's limit), as the backend does for large tensors.
    std::vector<float> matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, uint64_t max_part_bytes = 0);
    // The products of one input as the backend records q/k/v or gate/up (record_products): each
    // [n x ws[i]->rows]; their input encoded once per encoding they need.
    std::vector<std::vector<float>> products(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x, int64_t n,
                                             uint64_t max_part_bytes = 0);
    // Rows `tokens` of `table`, dequantized and times `scale`: [tokens x table.cols].
    std::vector<float> embed(const WeightMatrix& table, const std::vector<int32_t>& tokens, uint64_t max_part_bytes = 0,
                             float scale = 1.0f);
    // Each row of x[n x weight.size()] RMS-normalised and scaled by `weight`.
    std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& weight, float eps);
    // record_qkv_prepare on q[n x n_head x head_dim], k, v[n x n_head_kv x head_dim]: `bias` ([q_dim | kv_dim |
    // kv_dim]) and the norms (head_dim each) are left out when empty; token i sits at positions[i] in slots[i].
    QkvPrepared qkv_prepare(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                            const std::vector<float>& bias, const std::vector<float>& q_norm, const std::vector<float>& k_norm,
                            const std::vector<int32_t>& positions, const std::vector<int32_t>& slots, const RopeParams& rope,
                            const QkvPrepareShape& shape);
    // q, k, v = rms_norm(x[n x cols]) * norm_weight times wq, wk, wv (ws) for the n tokens of
    // `positions`, then qkv_prepare's step with the other inputs as qkv_prepare takes them:
    // `fused`: in the product's dispatch (record_matvec_qkv_prepared), recorded `calls` times over
    // one set of counters; else record_matvec_multi, then record_qkv_prepare.
    QkvPrepared qkv_product_prepared(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x,
                                     const std::vector<float>& norm_weight, const std::vector<float>& bias,
                                     const std::vector<float>& q_norm, const std::vector<float>& k_norm,
                                     const std::vector<int32_t>& positions, const std::vector<int32_t>& slots,
                                     const RopeParams& rope, const QkvPrepareShape& shape, bool fused, int calls = 1);
    // gate[i] = act(gate[i]) * up[i]: SwiGLU or GeGLU.
    std::vector<float> gated_activation(const std::vector<float>& gate, const std::vector<float>& up,
                                        FfnActivation activation);
    // The attention context [n x n_head x head_dim] of q[n x n_head x head_dim] over
    // k, v [n x n_head_kv x head_dim], stored in the cache first (record_qkv_prepare without
    // biases, norms or rotation).
    std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                 const AttentionShape& shape);
    // The context [queries x n_head x head_dim] of q (the querying positions of every sequence
    // in order, n_head x head_dim each) with shape's heads, scale, window and cache type (its
    // block_table is unused), in one dispatch over all sequences: record_attention_split with
    // `splits` in tiles of `tile_tokens`; `shared_memory_build`: the split kernel's build without
    // subgroup operations even where the device has them.
    std::vector<float> attention_batch(const std::vector<float>& q, const std::vector<AttentionSequence>& sequences,
                                       const AttentionShape& shape, uint32_t splits, bool shared_memory_build = false,
                                       uint32_t tile_tokens = 1);
    // attention_tile_tokens on this device.
    uint32_t attention_tile_tokens(uint32_t group_heads, uint32_t head_dim) const;

    // The decode products of gpu/vk_matvec.h (n <= 8 tokens), weights uploaded in parts of at
    // most max_part_bytes (0: the device's limit). norm_weight empty: no RMSNorm prologue.
    struct MatvecOptions {
        bool accumulate = false;
        std::vector<float> y_initial;    // [n x rows], the values accumulated into
        std::vector<float> norm_weight;  // [cols]
        float eps = 1e-6f;
        uint64_t max_part_bytes = 0;
    };
    // y[n x w.rows] (+)= norm(x[n x w.cols]) * W^T through record_matvec.
    std::vector<float> matvec(const WeightMatrix& w, const std::vector<float>& x, int64_t n, const MatvecOptions& options);
    // One output [n x rows_i] per matrix, all in one record_matvec_multi dispatch.
    std::vector<std::vector<float>> matvec_multi(const std::vector<const WeightMatrix*>& ws, const std::vector<float>& x,
                                                 int64_t n, const MatvecOptions& options);
    // residual[t] + calls x rms_norm(x[t] * W^T) * post_weight: record_matvec_post_normed
    // recorded `calls` times over one counter, each adding to the residual.
    std::vector<float> matvec_post_normed(const WeightMatrix& w, const std::vector<float>& x, int64_t n,
                                          const std::vector<float>& residual, const std::vector<float>& post_weight, float eps,
                                          int calls);
    // act(norm(x) * gate^T) * (norm(x) * up^T) through record_matvec_gated.
    std::vector<float> matvec_gated(const WeightMatrix& gate, const WeightMatrix& up, const std::vector<float>& x, int64_t n,
                                    FfnActivation activation, const MatvecOptions& options);

    // Decode-product kernels that bench_gpu_matvec times against each other.
    enum class ProductKernel {
        Matmul,       // record_matmul per matrix (gated: then swiglu.comp), as the unfused layer runs
        Matvec,       // record_matvec per matrix
        MatvecMulti,  // record_matvec_multi over every matrix
        MatvecGated,  // record_matvec_gated of ws[0] (gate) and ws[1] (up)
    };
    // Whether the device has GPU timestamps (time_products needs them).
    bool has_timestamps() const;
    // GPU microseconds per call of each kernel over the matrices `ws` (uploaded once) for each
    // token count (result[kernel][token count]), from `reps` calls recorded back to back with a
    // barrier between; empty without timestamps.
    std::vector<std::vector<double>> time_products(const std::vector<const WeightMatrix*>& ws,
                                                   const std::vector<ProductKernel>& kernels,
                                                   const std::vector<int64_t>& token_counts, int reps);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace inferscope::gpu
