#pragma once
// The Vulkan backend: weights uploaded once in their block format, the paged KV cache in
// device memory (the CPU backend's layout), and each forward pass recorded into one
// command buffer with a barrier after every dispatch and a timestamp after every operation.
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {

class VulkanBackend final : public Backend {
public:
    // max_pass_tokens, op_timestamps: see VulkanBackendOptions.
    VulkanBackend(std::shared_ptr<const Model> model, const ContextOptions& options, int max_pass_tokens = 0,
                  bool op_timestamps = true);
    ~VulkanBackend() override;

    std::string name() const override;
    void allocate_kv(const KvCacheLayout& layout) override;
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override;
    void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) override;
    void set_activation_tap(ActivationTap* tap) override;
    std::vector<OpTime> last_forward_gpu_times() const override { return gpu_times_; }

    int validation_errors() const { return ctx_->validation_errors(); }

private:
    struct Layer {
        Buffer attn_norm, ffn_norm;
        DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
        Buffer bq, bk, bv;                            // empty without biases
        Buffer q_norm, k_norm;                        // [head_dim], empty without per-head Q/K norms
        Buffer post_attention_norm, post_ffw_norm;    // [n_embd], empty without post-norms
        bool local = false;                           // a sliding-window layer
        bool kv_local = false;                        // its K and V live in the local group's blocks
        Buffer k_cache, v_cache;
    };
    // One KV group's view of a pass (int32), written by the host.
    struct KvTables {
        Buffer slots, table_start;  // [max_tokens] each token's cache slot, where its table begins
        Buffer tables;              // the pass's block tables, concatenated; grown on demand
    };
    // Per-pass inputs written by the host (host-visible) and activations (device), sized for
    // max_tokens_ tokens.
    struct StepBuffers {
        Buffer tokens, positions, output_rows;                       // int32 [max_tokens]
        KvTables global_kv, local_kv;                                // local_kv: with a local group only
        Buffer x, normed, projected;                                 // [max_tokens x n_embd]
        Buffer q, context;                                           // [max_tokens x q_dim]
        Buffer k, v;                                                 // [max_tokens x kv_dim]
        Buffer gate, up;                                             // [max_tokens x n_ff]
        Buffer logits, logits_host;                                  // [max_tokens x n_vocab]
    };

    void upload_weights();
    void allocate_step_buffers();
    void ensure_rope_positions(int n_positions);
    int fill_inputs(std::span<const BatchToken> tokens, const KvCache& cache);
    void fill_kv_tables(std::span<const BatchToken> tokens, const KvBlockPool& pool, KvTables& out);
    void record_pass(VkCommandBuffer cmd, uint32_t n, uint32_t n_out);
    void record_layer(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    void record_qkv(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    void record_qk_norms(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    void record_attention_block(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    void record_ffn(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    // x += w * input, or with a post-norm x += rms_norm(w * input) * post_norm.
    void record_residual_product(VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer input, const Buffer& post_norm,
                                 uint32_t n, const char* product_op, const char* norm_op);
    void run_pass(std::span<const BatchToken> tokens, const KvCache& cache, float* logits);
    void mark(VkCommandBuffer cmd, const char* op);
    void collect_times();

    std::shared_ptr<const Model> model_;
    std::unique_ptr<VkContext> ctx_;
    std::unique_ptr<Kernels> kernels_;
    std::vector<Layer> layers_;
    DeviceMatrix token_embd_, output_;
    Buffer output_norm_;
    Buffer rope_table_;        // [positions x rope_dim/2] (cos, sin)
    Buffer rope_table_local_;  // the same for sliding-window layers (their own base); empty without them
    int rope_positions_ = 0;
    KvCacheLayout kv_layout_;
    int max_tokens_ = 0;
    StepBuffers step_;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    uint32_t query_capacity_ = 0;
    std::vector<const char*> query_ops_;  // op that ended at each timestamp after the first
    std::vector<OpTime> gpu_times_;
};

}  // namespace inferscope::gpu
