#pragma once
// The CPU backend: the reference forward pass over a ragged batch, F32 activations,
// weights used in place from the mapped file, the paged KV cache in host memory.
#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/activation_quant.h"
#include "engine/backend/cpu/kernels/activation_kernels.h"
#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kv_storage.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/backend/cpu/ops.h"
#include "engine/core/thread_pool.h"

namespace inferscope {

class Model;
struct LayerWeights;

class CpuBackend final : public Backend {
public:
    CpuBackend(std::shared_ptr<const Model> model, int n_threads);

    std::string name() const override;
    void allocate_kv(const KvCacheLayout& layout) override;
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override;
    void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) override;
    void set_activation_tap(ActivationTap* tap) override { tap_ = tap; }
    // Applies to the inputs of q/k/v/o and gate/up/down in every block, not to the output
    // head (as LLM.int8() leaves lm_head in high precision).
    void set_activation_precision(const ActivationPrecision& precision) override { activation_precision_ = precision; }

    int thread_count() const { return pool_.size(); }

private:
    // Activation buffers for one step, row-major with one row per batch token.
    struct Activations {
        std::vector<float> x;          // [n x n_embd] residual stream
        std::vector<float> normed;     // [n x n_embd]
        std::vector<float> q;          // [n x q_dim]
        std::vector<float> k;          // [n x kv_dim]
        std::vector<float> v;          // [n x kv_dim]
        std::vector<float> context;    // [n x q_dim] attention output per head, concatenated
        std::vector<float> projected;  // [n x n_embd] attention or FFN output
        std::vector<float> gate;       // [n x n_ff]
        std::vector<float> up;         // [n x n_ff]
        std::vector<float> rope_cos;   // [n x rope_dim / 2] of each token's position, for the global layers
        std::vector<float> rope_sin;   // [n x rope_dim / 2]
        std::vector<float> rope_cos_local;  // [n x rope_dim / 2] the same for local layers; empty without them
        std::vector<float> rope_sin_local;  // [n x rope_dim / 2]
        void resize(int64_t n, const ModelConfig& c);
    };

    // Where one layer's K and V live: its group's block tables and storage, and its index there.
    struct LayerKv {
        const KvBlockPool& pool;
        CpuKvStorage& storage;
        int index;
    };
    LayerKv layer_kv(int layer, const KvCache& cache);

    void embed(std::span<const BatchToken> tokens);
    void attention_block(int layer, std::span<const BatchToken> tokens, const KvCache& cache);
    void store_kv(std::span<const BatchToken> tokens, const LayerKv& kv);
    // With store_own_kv each (token, KV head) item first stores its own K and V: only when no
    // token reads another's, that is one token per sequence (a decode step).
    void attend(int layer, std::span<const BatchToken> tokens, const LayerKv& kv, bool store_own_kv);
    // One thread's working memory for attend_one.
    struct AttentionScratch {
        std::vector<float> scores;                 // [heads per KV head x context]
        std::vector<const uint16_t*> k16, v16;     // the KV head's part of each block (F16 cache)
        std::vector<const float*> k32, v32;        // the same for an F32 cache
    };
    void attend_one(int layer, const BatchToken& token, int64_t token_index, int kv_head, const LayerKv& kv,
                    AttentionScratch& scratch);
    void ffn_block(int layer, std::span<const BatchToken> tokens);
    void output_logits(std::span<const BatchToken> tokens, float* logits);
    // fn(begin, end) over the n token rows of a step: on this thread for a decode step or a
    // small batch (not worth a hand-out), over the pool for a prompt.
    static constexpr int64_t kParallelTokenRows = 8;
    template <class Fn>
    void over_token_rows(int64_t n, const Fn& fn);
    void add_residual(int64_t n);  // x += projected, n rows
    void project_qkv(int layer, std::span<const BatchToken> tokens);
    // projected = rms_norm(projected) * weight in place, where the architecture has post-norms.
    void post_norm(const std::vector<float>& weight, int64_t n, const char* tap_name, int layer,
                   std::span<const BatchToken> tokens);
    void rms_norm_rows(const std::vector<float>& weight, int64_t n, std::vector<float>& out, const std::vector<float>& in);
    // The input x [n x cols] of a linear layer as the activation precision has it.
    const float* linear_input(const std::vector<float>& x, int64_t n, int64_t cols);
    void publish(const char* suffix, int layer, const std::vector<float>& data, int64_t cols,
                 std::span<const BatchToken> tokens);

    std::shared_ptr<const Model> model_;
    ThreadPool pool_;
    CpuKvStorage kv_global_;
    CpuKvStorage kv_local_;  // sliding-window layers kept apart; empty otherwise
    MatmulScratch scratch_;
    Activations act_;
    std::vector<float> output_rows_;  // [n_outputs x n_embd] final hidden states of output tokens
    std::vector<AttentionScratch> attention_scratch_;  // per thread
    AttentionKernels attention_kernels_;
    ActivationKernels activation_kernels_;
    RopeParams rope_;        // the model's (points into its frequency factors), for the global layers
    RopeParams rope_local_;  // local (sliding-window) layers: their own base, no scaling
    ActivationTap* tap_ = nullptr;
    ActivationPrecision activation_precision_;
    ActivationQuantScratch activation_quant_;
};

}  // namespace inferscope
