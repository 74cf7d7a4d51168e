#pragma once
// The Vulkan backend: weights uploaded once in their block format, the paged KV cache in
// device memory (the CPU backend's layout), and each forward pass one command buffer,
// recorded once per pass shape and replayed: every per-pass value is read from buffers the
// pass itself fills from host staging at its start.
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "gpu/vk_bandwidth.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"
#include "gpu/vulkan_backend_factory.h"

namespace inferscope::gpu {

class VulkanBackend final : public Backend {
public:
    // Everything but `validation` (ContextOptions) as VulkanBackendOptions describes it.
    VulkanBackend(std::shared_ptr<const Model> model, const ContextOptions& context, const VulkanBackendOptions& options);
    ~VulkanBackend() override;

    std::string name() const override;
    void allocate_kv(const KvCacheLayout& layout) override;
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override;
    void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) override;
    void set_activation_tap(ActivationTap* tap) override;
    std::vector<OpTime> last_forward_gpu_times() const override { return gpu_times_; }
    std::optional<DeviceSubmission> last_forward_submission() const override { return submission_; }
    // A prompt long enough for the tiled products, then a decode step: the kernels of the
    // passes a conversation runs, created and (on a CPU driver, which compiles at first
    // dispatch) run once.
    std::vector<int> warm_up_pass_tokens() const override { return {static_cast<int>(Kernels::kTiledMinTokens), 1}; }
    // Shorter prompts' and several logit rows' mat-vec kernels, specialized by their token count:
    // created side by side (VulkanBackendOptions::kernels_ahead), not run.
    void prepare_passes(int most_tokens, int most_logit_rows) override;

    int validation_errors() const { return ctx_->validation_errors(); }
    VkContext& context() { return *ctx_; }
    bool encodes_quantized_inputs() const { return kernels_->integer_dot(); }
    const BufferArena& weight_arena() const { return *weight_arena_; }
    // The device's read bandwidth (gpu/vk_bandwidth.h); passes recorded before are recorded anew.
    ReadBandwidth measure_read_bandwidth() { return gpu::measure_read_bandwidth(*ctx_, *kernels_); }

private:
    struct Layer {
        Buffer attn_norm, ffn_norm;
        DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
        Buffer qkv_bias;                              // [q_dim | kv_dim | kv_dim], empty without biases
        Buffer qk_norms;                              // [head_dim (q) | head_dim (k)], empty without per-head norms
        bool q_norm = false, k_norm = false;
        Buffer post_attention_norm, post_ffw_norm;    // [n_embd], empty without post-norms
        bool local = false;                           // a sliding-window layer
        bool kv_local = false;                        // its K and V live in the local group's blocks
        Buffer k_cache, v_cache;
    };
    // A per-pass int32 input: the host writes `host`, the pass copies it whole into `device`
    // (what the shaders read) before its first dispatch.
    struct StagedInts {
        Buffer host, device;
        int32_t* data() const { return static_cast<int32_t*>(host.mapped()); }
        size_t capacity() const { return host.size_bytes() / sizeof(int32_t); }
    };
    // One KV group's view of a pass.
    struct KvTables {
        StagedInts slots, table_start;  // [max_tokens] each token's cache slot, where its table begins
        StagedInts tables;              // the pass's block tables, concatenated; grown on demand
    };
    // Per-pass inputs and activations, sized for max_tokens_ tokens; logits for logit_rows.
    struct StepBuffers {
        StagedInts tokens, positions, output_rows;                   // [max_tokens]
        KvTables global_kv, local_kv;                                // local_kv: with a local group only
        Buffer x, normed, projected;                                 // [max_tokens x n_embd]
        Buffer finish_counters;  // one per head: the q/k/v mat-vec's per head, or the post-norm's first
        Buffer q, context;                                           // [max_tokens x q_dim]
        Buffer k, v;                                                 // [max_tokens x kv_dim]
        Buffer gate, up;                                             // [max_tokens x n_ff]
        Buffer encoded;  // a product's input encoded for the integer-dot tiles (with integer dot products)
        Buffer logits, logits_host;                                  // [logit_rows x n_vocab]
        int logit_rows = 0;                                          // grown to the most a pass has wanted
    };
    // What a pass's commands depend on besides the buffers they name.
    struct PassShape {
        uint32_t n = 0, n_out = 0;    // tokens, and those that want logits
        uint32_t attention_tile = 1;  // tokens per attention tile (attention_pass_tile)
        auto operator<=>(const PassShape&) const = default;
    };
    // A recorded pass: valid while the buffers it names live (the kernels' generation).
    struct Recording {
        VkCommandBuffer cmd = VK_NULL_HANDLE;
        PassShape shape;
        uint64_t generation = 0;
        std::vector<const char*> query_ops;  // the op each timestamp closes
        RecordCounts counts;
    };

    uint64_t check_weights_fit() const;  // the weight matrices' device bytes
    void upload_weights();
    void allocate_step_buffers();
    // The attention's partials and counters and each layer's K and V for `layout` (allocate_kv's checks passed).
    void allocate_kv_buffers(const KvCacheLayout& layout);
    StagedInts staged_ints(size_t count) const;
    void ensure_rope_positions(int n_positions);
    void ensure_logit_rows(int rows);
    Recording& recording_for(const PassShape& shape);
    VkCommandBuffer recorded_pass(const PassShape& shape);
    void create_pipelines_ahead(const PassShape& shape);
    void note_pipelines(const PassShape& shape);
    void forget_recordings();
    void record_input_copies(VkCommandBuffer cmd);
    int fill_inputs(std::span<const BatchToken> tokens, const KvCache& cache);
    void fill_kv_tables(std::span<const BatchToken> tokens, const KvBlockPool& pool, KvTables& out);
    void record_pass(VkCommandBuffer cmd, const PassShape& shape);
    void record_output_product(VkCommandBuffer cmd, uint32_t n, uint32_t n_out);
    void record_layer(VkCommandBuffer cmd, const Layer& layer, const PassShape& shape);
    void record_norm(VkCommandBuffer cmd, const Buffer& weight, uint32_t n, const char* op);
    bool record_qkv(VkCommandBuffer cmd, const Layer& layer, const QkvPrepare& prepare, uint32_t n);
    QkvPrepare qkv_prepare_op(const Layer& layer) const;
    void record_attention(VkCommandBuffer cmd, const Layer& layer, const PassShape& shape);
    uint32_t attention_tile(std::span<const BatchToken> tokens) const;
    uint32_t attention_splits(uint32_t n, uint32_t tile) const;
    void record_ffn(VkCommandBuffer cmd, const Layer& layer, uint32_t n);
    // x += w * input, or with a post-norm x += rms_norm(w * input) * post_norm (for a few tokens
    // in the product's own dispatch).
    void record_residual_product(VkCommandBuffer cmd, const DeviceMatrix& w, VkBuffer input, const Buffer& post_norm,
                                 uint32_t n, const char* product_op, const char* norm_op);
    void run_pass(std::span<const BatchToken> tokens, const KvCache& cache, float* logits);
    void fit_passes_to_watchdog(int pass_tokens, std::chrono::steady_clock::duration elapsed);
    void mark(VkCommandBuffer cmd, const char* op);
    void collect_times(const std::vector<const char*>& query_ops);

    std::shared_ptr<const Model> model_;
    std::unique_ptr<VkContext> ctx_;
    std::unique_ptr<Kernels> kernels_;
    std::unique_ptr<BufferArena> weight_arena_;  // declared before the weights: it outlives their buffers
    std::vector<Layer> layers_;
    DeviceMatrix token_embd_, output_;
    Buffer output_norm_;
    Buffer rope_table_;        // [positions x rope_dim/2] (cos, sin)
    Buffer rope_table_local_;  // the same for sliding-window layers (their own base); empty without them
    int rope_positions_ = 0;
    KvCacheLayout kv_layout_;
    uint32_t attention_max_context_ = 0;  // positions a sequence can reach: the global pool's
    Buffer attention_partials_;           // split attention's partial sums, for the pass lengths that split
    Buffer attention_split_counters_;     // and its counters (gpu/vk_attention.h)
    int max_tokens_ = 0;         // what the buffers hold
    int pass_token_limit_ = 0;   // what a pass takes: max_tokens_, or fewer where passes ran too long
    StepBuffers step_;
    bool replay_ = true;
    bool kernels_ahead_ = false;
    std::vector<Recording> recordings_;  // least recently used first
    std::set<PassShape> shapes_with_pipelines_;  // recorded once: their pipelines exist
    VkQueryPool queries_ = VK_NULL_HANDLE;
    uint32_t query_capacity_ = 0;
    std::vector<const char*> query_ops_;  // while recording: the op each timestamp after the first closes
    std::vector<OpTime> gpu_times_;
    DeviceSubmission submission_;
};

}  // namespace inferscope::gpu
