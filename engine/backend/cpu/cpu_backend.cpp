#include "engine/backend/cpu/cpu_backend.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/ops.h"
#include "engine/backend/default_backend.h"
#include "engine/core/error.h"
#include "engine/formats/quant.h"
#include "engine/model/model.h"

namespace inferscope {

void CpuBackend::Activations::resize(int64_t n, const ModelConfig& c) {
    const auto rows = static_cast<size_t>(n);
    x.resize(rows * static_cast<size_t>(c.n_embd));
    normed.resize(x.size());
    projected.resize(x.size());
    q.resize(rows * static_cast<size_t>(c.q_dim()));
    context.resize(q.size());
    k.resize(rows * static_cast<size_t>(c.kv_dim()));
    v.resize(k.size());
    gate.resize(rows * static_cast<size_t>(c.n_ff));
    up.resize(gate.size());
    rope_cos.resize(rows * static_cast<size_t>(c.rope_dim / 2));
    rope_sin.resize(rope_cos.size());
    rope_cos_local.resize(c.has_local_layers() ? rope_cos.size() : 0);
    rope_sin_local.resize(rope_cos_local.size());
}

CpuBackend::CpuBackend(std::shared_ptr<const Model> model, int n_threads)
    : model_(std::move(model)), pool_(n_threads), attention_kernels_(attention_kernels(active_cpu_isa())),
      activation_kernels_(activation_kernels(active_cpu_isa())),
      rope_(rope_params(model_->config(), model_->rope_freq_factors())),
      rope_local_(local_rope_params(model_->config(), model_->rope_freq_factors())) {
    // Our pool splits the rows of every product, F32 ones included, so OpenBLAS runs
    // single-threaded inside each worker: its own threads would compete for the same cores
    // while ours spin between loops.
    openblas_set_num_threads(1);
}

// Names what decides speed: threads, kernel family, and the family's choices: where the
// AVX-512 4-bit kernels prefetch, whether the ARM64 F16 rows multiply halves with FMLAL.
std::string CpuBackend::name() const {
    const CpuIsa isa = active_cpu_isa();
    std::string choices;
    if (isa == CpuIsa::Avx512) choices = ", 4-bit prefetch " + std::string(prefetch_level_name(active_prefetch_level()));
    if ((isa == CpuIsa::Dotprod || isa == CpuIsa::I8mm) && cpu_features().fp16_fml) choices = ", F16 over FMLAL";
    return "CPU (" + std::to_string(pool_.size()) + (pool_.size() == 1 ? " thread, " : " threads, ") +
           std::string(cpu_isa_name(isa)) + choices + ")";
}

void CpuBackend::allocate_kv(const KvCacheLayout& layout) {
    check_kv_layout(model_->config(), layout);
    // The old storage goes first, so that the old and the new never need memory at once.
    kv_global_ = CpuKvStorage();
    kv_local_ = CpuKvStorage();
    kv_global_ = CpuKvStorage(layout.global);
    if (layout.has_local()) kv_local_ = CpuKvStorage(layout.local);
}

void CpuBackend::copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) {
    CpuKvStorage& storage = group == KvGroup::Local ? kv_local_ : kv_global_;
    for (const BlockCopy& copy : copies) storage.copy_block(copy.src, copy.dst);
}

CpuBackend::LayerKv CpuBackend::layer_kv(int layer, const KvCache& cache) {
    const KvCacheLayout& layout = cache.layout();
    const auto l = static_cast<size_t>(layer);
    return {cache.pool_for_layer(layer), layout.layer_group[l] == KvGroup::Local ? kv_local_ : kv_global_,
            layout.index_in_group[l]};
}

void CpuBackend::forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) {
    const ModelConfig& c = model_->config();
    act_.resize(static_cast<int64_t>(tokens.size()), c);
    const int half = c.rope_dim / 2;
    for (size_t i = 0; i < tokens.size(); ++i) {
        rope_angles(tokens[i].pos, rope_, act_.rope_cos.data() + i * half, act_.rope_sin.data() + i * half);
        if (!act_.rope_cos_local.empty()) {
            rope_angles(tokens[i].pos, rope_local_, act_.rope_cos_local.data() + i * half,
                        act_.rope_sin_local.data() + i * half);
        }
    }
    embed(tokens);
    for (int layer = 0; layer < c.n_layer; ++layer) {
        attention_block(layer, tokens, cache);
        ffn_block(layer, tokens);
    }
    output_logits(tokens, logits);
}

void CpuBackend::embed(std::span<const BatchToken> tokens) {
    const WeightMatrix& embedding = model_->token_embedding();
    const int64_t n_embd = model_->config().n_embd;
    for (size_t i = 0; i < tokens.size(); ++i) {
        float* row = act_.x.data() + static_cast<int64_t>(i) * n_embd;
        dequantize_row(embedding.type, embedding.row(tokens[i].token), row, n_embd);
        const float scale = model_->config().embedding_scale;
        if (scale != 1.0f) {
            for (int64_t d = 0; d < n_embd; ++d) row[d] *= scale;
        }
    }
    publish("token_embd", -1, act_.x, n_embd, tokens);
}

template <class Fn>
void CpuBackend::over_token_rows(int64_t n, const Fn& fn) {
    if (n < kParallelTokenRows) {
        fn(0, n);
    } else {
        pool_.parallel_for(n, fn);
    }
}

void CpuBackend::rms_norm_rows(const std::vector<float>& weight, int64_t n, std::vector<float>& out,
                               const std::vector<float>& in) {
    const ModelConfig& c = model_->config();
    over_token_rows(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            activation_kernels_.rms_norm(in.data() + i * c.n_embd, weight.data(), c.n_embd, c.rms_norm_eps,
                                         out.data() + i * c.n_embd);
        }
    });
}

void CpuBackend::add_residual(int64_t n) {
    const int64_t n_embd = model_->config().n_embd;
    over_token_rows(n, [&](int64_t begin, int64_t end) {
        add_inplace(act_.x.data() + begin * n_embd, act_.projected.data() + begin * n_embd, (end - begin) * n_embd);
    });
}

namespace {

// True when no token of the step sees another's K and V. Batches past kMaxDecodeBatch are
// prompts (or mixes) and take the separate store without the quadratic check.
bool one_token_per_sequence(std::span<const BatchToken> tokens) {
    constexpr size_t kMaxDecodeBatch = 256;
    if (tokens.size() > kMaxDecodeBatch) return false;
    for (size_t i = 0; i < tokens.size(); ++i) {
        for (size_t j = 0; j < i; ++j) {
            if (tokens[j].seq == tokens[i].seq) return false;
        }
    }
    return true;
}

}  // namespace

void CpuBackend::attention_block(int layer, std::span<const BatchToken> tokens, const KvCache& cache) {
    const ModelConfig& c = model_->config();
    const LayerWeights& w = model_->layers()[static_cast<size_t>(layer)];
    const auto n = static_cast<int64_t>(tokens.size());

    rms_norm_rows(w.attn_norm, n, act_.normed, act_.x);
    publish("attn_in", layer, act_.normed, c.n_embd, tokens);
    project_qkv(layer, tokens);
    publish("q", layer, act_.q, c.q_dim(), tokens);
    publish("k", layer, act_.k, c.kv_dim(), tokens);
    publish("v", layer, act_.v, c.kv_dim(), tokens);

    const LayerKv kv = layer_kv(layer, cache);
    const bool store_in_attention = one_token_per_sequence(tokens);
    if (!store_in_attention) store_kv(tokens, kv);
    attend(layer, tokens, kv, store_in_attention);
    publish("attn_ctx", layer, act_.context, c.q_dim(), tokens);

    matmul(w.wo, linear_input(act_.context, n, c.q_dim()), n, act_.projected.data(), pool_, scratch_);
    publish("attn_out", layer, act_.projected, c.n_embd, tokens);
    post_norm(w.post_attention_norm, n, "attn_post_norm", layer, tokens);
    add_residual(n);
    publish("ffn_in", layer, act_.x, c.n_embd, tokens);
}

// q, k, v of every token from the normed input: projections, biases, per-head Q/K norms,
// then RoPE with the angles of the layer's kind (local layers have their own base).
void CpuBackend::project_qkv(int layer, std::span<const BatchToken> tokens) {
    const ModelConfig& c = model_->config();
    const LayerWeights& w = model_->layers()[static_cast<size_t>(layer)];
    const auto n = static_cast<int64_t>(tokens.size());
    const MatmulOutput qkv[] = {{&w.wq, act_.q.data()}, {&w.wk, act_.k.data()}, {&w.wv, act_.v.data()}};
    matmul_shared_input(qkv, linear_input(act_.normed, n, c.n_embd), n, pool_, scratch_);
    const int half = c.rope_dim / 2;
    const bool local = c.is_local_layer(layer);
    const float* cos_table = local ? act_.rope_cos_local.data() : act_.rope_cos.data();
    const float* sin_table = local ? act_.rope_sin_local.data() : act_.rope_sin.data();
    const RopeParams& rope = local ? rope_local_ : rope_;
    const auto norm_heads = [&](float* heads, int n_heads, const std::vector<float>& weight) {
        for (int h = 0; h < n_heads; ++h) {
            float* head = heads + static_cast<int64_t>(h) * c.head_dim;
            activation_kernels_.rms_norm(head, weight.data(), c.head_dim, c.rms_norm_eps, head);
        }
    };
    over_token_rows(n, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            float* q = act_.q.data() + i * c.q_dim();
            float* k = act_.k.data() + i * c.kv_dim();
            if (!w.bq.empty()) add_inplace(q, w.bq.data(), c.q_dim());
            if (!w.bk.empty()) add_inplace(k, w.bk.data(), c.kv_dim());
            if (!w.bv.empty()) add_inplace(act_.v.data() + i * c.kv_dim(), w.bv.data(), c.kv_dim());
            if (!w.q_norm.empty()) norm_heads(q, c.n_head, w.q_norm);
            if (!w.k_norm.empty()) norm_heads(k, c.n_head_kv, w.k_norm);
            apply_rope(q, c.n_head, c.head_dim, cos_table + i * half, sin_table + i * half, rope);
            apply_rope(k, c.n_head_kv, c.head_dim, cos_table + i * half, sin_table + i * half, rope);
        }
    });
}

void CpuBackend::post_norm(const std::vector<float>& weight, int64_t n, const char* tap_name, int layer,
                           std::span<const BatchToken> tokens) {
    if (weight.empty()) return;
    rms_norm_rows(weight, n, act_.projected, act_.projected);
    publish(tap_name, layer, act_.projected, model_->config().n_embd, tokens);
}

void CpuBackend::store_kv(std::span<const BatchToken> tokens, const LayerKv& kv) {
    const int kv_dim = model_->config().kv_dim();
    const int block_tokens = kv.pool.layout().block_tokens;
    // Each token writes its own slot (tokens of one block share cache lines, not bytes).
    over_token_rows(static_cast<int64_t>(tokens.size()), [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const BatchToken& token = tokens[static_cast<size_t>(i)];
            const auto table = kv.pool.block_table(token.seq);
            kv.storage.write(kv.index, table[static_cast<size_t>(token.pos / block_tokens)], token.pos % block_tokens,
                      act_.k.data() + i * kv_dim, act_.v.data() + i * kv_dim);
        }
    });
}

// Each (token, KV head) pair attends over positions 0..pos of its own sequence, block by
// block through the sequence's block table; the query heads that share the KV head (GQA)
// are served by one pass over its keys and values.
void CpuBackend::attend(int layer, std::span<const BatchToken> tokens, const LayerKv& kv, bool store_own_kv) {
    const ModelConfig& c = model_->config();
    const int block_tokens = kv.pool.layout().block_tokens;
    attention_scratch_.resize(static_cast<size_t>(pool_.size()));
    const int64_t n_pairs = static_cast<int64_t>(tokens.size()) * c.n_head_kv;
    pool_.parallel_for_indexed(n_pairs, [&](int thread, int64_t begin, int64_t end) {
        for (int64_t item = begin; item < end; ++item) {
            // In a prompt the cost of a token grows with its position, so items alternate
            // between the front and the back of the batch: every thread's contiguous range
            // of items then holds as much early (cheap) as late (costly) work.
            const int64_t pair = item % 2 == 0 ? item / 2 : n_pairs - 1 - item / 2;
            const int64_t i = pair / c.n_head_kv;
            const BatchToken& token = tokens[static_cast<size_t>(i)];
            const int kv_head = static_cast<int>(pair % c.n_head_kv);
            if (store_own_kv) {
                const int64_t first = i * c.kv_dim() + static_cast<int64_t>(kv_head) * c.head_dim;
                const int32_t block = kv.pool.block_table(token.seq)[static_cast<size_t>(token.pos / block_tokens)];
                kv.storage.write_head(kv.index, block, token.pos % block_tokens, kv_head, act_.k.data() + first,
                                      act_.v.data() + first);
            }
            attend_one(layer, token, i, kv_head, kv, attention_scratch_[static_cast<size_t>(thread)]);
        }
    });
}

namespace {

// This KV head's part of each of the sequence's first n_blocks blocks (K^T or V).
template <typename T>
void head_parts(const CpuKvStorage& kv, bool keys, int layer, std::span<const int32_t> table, int n_blocks, int kv_head,
                std::vector<const T*>& parts) {
    parts.resize(static_cast<size_t>(n_blocks));
    for (int b = 0; b < n_blocks; ++b) {
        const int32_t block = table[static_cast<size_t>(b)];
        parts[static_cast<size_t>(b)] =
            static_cast<const T*>(keys ? kv.k_part(layer, block, kv_head) : kv.v_part(layer, block, kv_head));
    }
}

}  // namespace

void CpuBackend::attend_one(int layer, const BatchToken& token, int64_t token_index, int kv_head, const LayerKv& kv,
                            AttentionScratch& scratch) {
    const ModelConfig& c = model_->config();
    const int block_tokens = kv.pool.layout().block_tokens;
    const int group = c.n_head / c.n_head_kv;
    const float scale = c.kq_scale();
    // A local layer's query sees the last sliding_window positions. The kernels walk whole
    // blocks, so the walk starts at the block holding the first visible position and the
    // `hidden` positions before it in that block get probability 0.
    const int first_visible = c.is_local_layer(layer) ? std::max(0, token.pos + 1 - c.sliding_window) : 0;
    const int first_block = first_visible / block_tokens;
    const int hidden = first_visible - first_block * block_tokens;
    const auto table = kv.pool.block_table(token.seq).subspan(static_cast<size_t>(first_block));
    const int n_ctx = token.pos + 1 - first_block * block_tokens;
    const int n_blocks = (n_ctx + block_tokens - 1) / block_tokens;
    const int64_t first_q = token_index * c.q_dim() + static_cast<int64_t>(kv_head) * group * c.head_dim;
    const float* q = act_.q.data() + first_q;        // [group x head_dim]
    float* out = act_.context.data() + first_q;      // [group x head_dim]
    scratch.scores.resize(static_cast<size_t>(group) * static_cast<size_t>(n_ctx));  // [group x n_ctx]
    float* scores = scratch.scores.data();

    if (kv.pool.layout().dtype == KvDtype::F16) {
        head_parts(kv.storage, true, kv.index, table, n_blocks, kv_head, scratch.k16);
        attention_kernels_.scores_f16(q, group, c.head_dim, scratch.k16.data(), block_tokens, n_ctx, scale, scores, n_ctx);
    } else {
        head_parts(kv.storage, true, kv.index, table, n_blocks, kv_head, scratch.k32);
        attention_kernels_.scores_f32(q, group, c.head_dim, scratch.k32.data(), block_tokens, n_ctx, scale, scores, n_ctx);
    }
    for (int g = 0; g < group; ++g) {
        float* row = scores + static_cast<int64_t>(g) * n_ctx;
        attention_kernels_.softmax(row + hidden, n_ctx - hidden);
        std::fill(row, row + hidden, 0.0f);
    }
    std::memset(out, 0, sizeof(float) * static_cast<size_t>(group) * static_cast<size_t>(c.head_dim));
    if (kv.pool.layout().dtype == KvDtype::F16) {
        head_parts(kv.storage, false, kv.index, table, n_blocks, kv_head, scratch.v16);
        attention_kernels_.accumulate_f16(scores, group, n_ctx, scratch.v16.data(), block_tokens, c.head_dim, n_ctx, c.head_dim,
                                          out);
    } else {
        head_parts(kv.storage, false, kv.index, table, n_blocks, kv_head, scratch.v32);
        attention_kernels_.accumulate_f32(scores, group, n_ctx, scratch.v32.data(), block_tokens, c.head_dim, n_ctx, c.head_dim,
                                          out);
    }
}

void CpuBackend::ffn_block(int layer, std::span<const BatchToken> tokens) {
    const ModelConfig& c = model_->config();
    const LayerWeights& w = model_->layers()[static_cast<size_t>(layer)];
    const auto n = static_cast<int64_t>(tokens.size());

    rms_norm_rows(w.ffn_norm, n, act_.normed, act_.x);
    publish("ffn_norm", layer, act_.normed, c.n_embd, tokens);
    const MatmulOutput gate_up[] = {{&w.w_gate, act_.gate.data()}, {&w.w_up, act_.up.data()}};
    matmul_shared_input(gate_up, linear_input(act_.normed, n, c.n_embd), n, pool_, scratch_);
    // On all threads: for a prompt this is millions of exponentials per layer.
    const auto gated = c.ffn_activation == FfnActivation::GeluTanh ? activation_kernels_.geglu : activation_kernels_.swiglu;
    pool_.parallel_for(n * c.n_ff, [&](int64_t begin, int64_t end) {
        gated(act_.gate.data() + begin, act_.up.data() + begin, end - begin);
    });
    publish("ffn_hidden", layer, act_.gate, c.n_ff, tokens);
    matmul(w.w_down, linear_input(act_.gate, n, c.n_ff), n, act_.projected.data(), pool_, scratch_);
    publish("ffn_out", layer, act_.projected, c.n_embd, tokens);
    post_norm(w.post_ffw_norm, n, "ffn_post_norm", layer, tokens);
    add_residual(n);
    publish("resid", layer, act_.x, c.n_embd, tokens);
}

void CpuBackend::output_logits(std::span<const BatchToken> tokens, float* logits) {
    const ModelConfig& c = model_->config();
    output_rows_.clear();
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!tokens[i].output) continue;
        output_rows_.resize(output_rows_.size() + static_cast<size_t>(c.n_embd));
        activation_kernels_.rms_norm(act_.x.data() + static_cast<int64_t>(i) * c.n_embd, model_->output_norm().data(),
                                     c.n_embd, c.rms_norm_eps,
                                     output_rows_.data() + output_rows_.size() - static_cast<size_t>(c.n_embd));
    }
    const auto n_out = static_cast<int64_t>(output_rows_.size()) / c.n_embd;
    if (tap_ != nullptr && n_out > 0) {
        tap_->on_tensor({"output_norm", -1, output_rows_.data(), n_out, c.n_embd, {}});
    }
    matmul(model_->output(), output_rows_.data(), n_out, logits, pool_, scratch_);
}

const float* CpuBackend::linear_input(const std::vector<float>& x, int64_t n, int64_t cols) {
    if (activation_precision_.is_f32()) return x.data();  // the default path: not even a call
    return quantize_activations(activation_precision_, x.data(), n, cols, activation_quant_);
}

void CpuBackend::publish(const char* suffix, int layer, const std::vector<float>& data, int64_t cols,
                         std::span<const BatchToken> tokens) {
    if (tap_ == nullptr) return;
    const std::string name = layer < 0 ? std::string(suffix) : "blk." + std::to_string(layer) + "." + suffix;
    tap_->on_tensor({name, layer, data.data(), static_cast<int64_t>(tokens.size()), cols, tokens});
}

std::unique_ptr<Backend> make_default_backend(std::shared_ptr<const Model> model, int n_threads) {
    return std::make_unique<CpuBackend>(std::move(model), n_threads);
}

}  // namespace inferscope
