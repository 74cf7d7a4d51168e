#include "engine/backend/cpu/cpu_backend.h"

#include <cblas.h>

#include <cmath>
#include <cstring>
#include <string>

#include "engine/backend/cpu/ops.h"
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
}

CpuBackend::CpuBackend(std::shared_ptr<const Model> model, int n_threads)
    : model_(std::move(model)), pool_(n_threads) {
    // OpenBLAS runs its own threads; giving it the same count keeps the machine from being
    // oversubscribed (our workers sleep while a BLAS call runs).
    openblas_set_num_threads(pool_.size());
}

std::string CpuBackend::name() const {
    return "CPU (" + std::to_string(pool_.size()) + (pool_.size() == 1 ? " thread)" : " threads)");
}

void CpuBackend::allocate_kv(const KvLayout& layout) {
    const ModelConfig& c = model_->config();
    if (layout.n_layer != c.n_layer || layout.n_head_kv != c.n_head_kv || layout.head_dim != c.head_dim) {
        throw InvalidArgument("KV layout does not match the model's layers and KV heads");
    }
    kv_ = CpuKvStorage(layout);
}

void CpuBackend::forward(std::span<const BatchToken> tokens, const KvBlockPool& pool, float* logits) {
    const ModelConfig& c = model_->config();
    act_.resize(static_cast<int64_t>(tokens.size()), c);
    embed(tokens);
    for (int layer = 0; layer < c.n_layer; ++layer) {
        attention_block(layer, tokens, pool);
        ffn_block(layer, tokens);
    }
    output_logits(tokens, logits);
}

void CpuBackend::embed(std::span<const BatchToken> tokens) {
    const WeightMatrix& embedding = model_->token_embedding();
    const int64_t n_embd = model_->config().n_embd;
    for (size_t i = 0; i < tokens.size(); ++i) {
        dequantize_row(embedding.type, embedding.row(tokens[i].token), act_.x.data() + static_cast<int64_t>(i) * n_embd,
                       n_embd);
    }
    publish("token_embd", -1, act_.x, n_embd, tokens);
}

void CpuBackend::rms_norm_rows(const std::vector<float>& weight, int64_t n, std::vector<float>& out,
                               const std::vector<float>& in) {
    const ModelConfig& c = model_->config();
    for (int64_t i = 0; i < n; ++i) {
        rms_norm_row(in.data() + i * c.n_embd, weight.data(), c.n_embd, c.rms_norm_eps, out.data() + i * c.n_embd);
    }
}

void CpuBackend::attention_block(int layer, std::span<const BatchToken> tokens, const KvBlockPool& pool) {
    const ModelConfig& c = model_->config();
    const LayerWeights& w = model_->layers()[static_cast<size_t>(layer)];
    const auto n = static_cast<int64_t>(tokens.size());

    rms_norm_rows(w.attn_norm, n, act_.normed, act_.x);
    publish("attn_in", layer, act_.normed, c.n_embd, tokens);
    matmul(w.wq, act_.normed.data(), n, act_.q.data(), pool_, scratch_);
    matmul(w.wk, act_.normed.data(), n, act_.k.data(), pool_, scratch_);
    matmul(w.wv, act_.normed.data(), n, act_.v.data(), pool_, scratch_);
    RopeParams rope;
    rope.rope_dim = c.rope_dim;
    rope.freq_base = c.rope_freq_base;
    rope.freq_scale = c.rope_freq_scale;
    rope.style = c.rope_style;
    rope.freq_factors = model_->rope_freq_factors().empty() ? nullptr : model_->rope_freq_factors().data();
    for (int64_t i = 0; i < n; ++i) {
        if (!w.bq.empty()) add_inplace(act_.q.data() + i * c.q_dim(), w.bq.data(), c.q_dim());
        if (!w.bk.empty()) add_inplace(act_.k.data() + i * c.kv_dim(), w.bk.data(), c.kv_dim());
        if (!w.bv.empty()) add_inplace(act_.v.data() + i * c.kv_dim(), w.bv.data(), c.kv_dim());
        const int32_t pos = tokens[static_cast<size_t>(i)].pos;
        apply_rope(act_.q.data() + i * c.q_dim(), c.n_head, c.head_dim, pos, rope);
        apply_rope(act_.k.data() + i * c.kv_dim(), c.n_head_kv, c.head_dim, pos, rope);
    }
    publish("q", layer, act_.q, c.q_dim(), tokens);
    publish("k", layer, act_.k, c.kv_dim(), tokens);
    publish("v", layer, act_.v, c.kv_dim(), tokens);

    store_kv(layer, tokens, pool);
    attend(layer, tokens, pool);
    publish("attn_ctx", layer, act_.context, c.q_dim(), tokens);

    matmul(w.wo, act_.context.data(), n, act_.projected.data(), pool_, scratch_);
    publish("attn_out", layer, act_.projected, c.n_embd, tokens);
    add_inplace(act_.x.data(), act_.projected.data(), n * c.n_embd);
    publish("ffn_in", layer, act_.x, c.n_embd, tokens);
}

void CpuBackend::store_kv(int layer, std::span<const BatchToken> tokens, const KvBlockPool& pool) {
    const int kv_dim = model_->config().kv_dim();
    const int block_tokens = pool.layout().block_tokens;
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto table = pool.block_table(tokens[i].seq);
        const int32_t pos = tokens[i].pos;
        const int64_t slot = static_cast<int64_t>(table[static_cast<size_t>(pos / block_tokens)]) * block_tokens +
                             pos % block_tokens;
        kv_.write(layer, slot, act_.k.data() + static_cast<int64_t>(i) * kv_dim,
                  act_.v.data() + static_cast<int64_t>(i) * kv_dim);
    }
}

// Each (token, head) pair attends over positions 0..pos of its own sequence, reading keys
// and values through the sequence's block table.
void CpuBackend::attend(int layer, std::span<const BatchToken> tokens, const KvBlockPool& pool) {
    const ModelConfig& c = model_->config();
    const int block_tokens = pool.layout().block_tokens;
    const int group = c.n_head / c.n_head_kv;
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    const auto n_pairs = static_cast<int64_t>(tokens.size()) * c.n_head;

    pool_.parallel_for(n_pairs, [&](int64_t begin, int64_t end) {
        std::vector<float> scores;
        std::vector<float> row(static_cast<size_t>(c.head_dim));
        for (int64_t pair = begin; pair < end; ++pair) {
            const int64_t i = pair / c.n_head;
            const int head = static_cast<int>(pair % c.n_head);
            const int kv_head = head / group;
            const BatchToken& token = tokens[static_cast<size_t>(i)];
            const auto table = pool.block_table(token.seq);
            const float* q = act_.q.data() + i * c.q_dim() + static_cast<int64_t>(head) * c.head_dim;
            float* out = act_.context.data() + i * c.q_dim() + static_cast<int64_t>(head) * c.head_dim;
            const int n_ctx = token.pos + 1;
            scores.resize(static_cast<size_t>(n_ctx));
            const auto slot_of = [&](int t) {
                return static_cast<int64_t>(table[static_cast<size_t>(t / block_tokens)]) * block_tokens + t % block_tokens;
            };
            for (int t = 0; t < n_ctx; ++t) {
                kv_.read_k(layer, slot_of(t), kv_head, row.data());
                float dot = 0.0f;
                for (int d = 0; d < c.head_dim; ++d) dot += q[d] * row[d];
                scores[static_cast<size_t>(t)] = dot * scale;
            }
            softmax_inplace(scores.data(), n_ctx);
            std::memset(out, 0, sizeof(float) * static_cast<size_t>(c.head_dim));
            for (int t = 0; t < n_ctx; ++t) {
                kv_.read_v(layer, slot_of(t), kv_head, row.data());
                const float p = scores[static_cast<size_t>(t)];
                for (int d = 0; d < c.head_dim; ++d) out[d] += p * row[d];
            }
        }
    });
}

void CpuBackend::ffn_block(int layer, std::span<const BatchToken> tokens) {
    const ModelConfig& c = model_->config();
    const LayerWeights& w = model_->layers()[static_cast<size_t>(layer)];
    const auto n = static_cast<int64_t>(tokens.size());

    rms_norm_rows(w.ffn_norm, n, act_.normed, act_.x);
    publish("ffn_norm", layer, act_.normed, c.n_embd, tokens);
    matmul(w.w_gate, act_.normed.data(), n, act_.gate.data(), pool_, scratch_);
    matmul(w.w_up, act_.normed.data(), n, act_.up.data(), pool_, scratch_);
    swiglu_inplace(act_.gate.data(), act_.up.data(), n * c.n_ff);
    publish("ffn_hidden", layer, act_.gate, c.n_ff, tokens);
    matmul(w.w_down, act_.gate.data(), n, act_.projected.data(), pool_, scratch_);
    publish("ffn_out", layer, act_.projected, c.n_embd, tokens);
    add_inplace(act_.x.data(), act_.projected.data(), n * c.n_embd);
    publish("resid", layer, act_.x, c.n_embd, tokens);
}

void CpuBackend::output_logits(std::span<const BatchToken> tokens, float* logits) {
    const ModelConfig& c = model_->config();
    output_rows_.clear();
    for (size_t i = 0; i < tokens.size(); ++i) {
        if (!tokens[i].output) continue;
        output_rows_.resize(output_rows_.size() + static_cast<size_t>(c.n_embd));
        rms_norm_row(act_.x.data() + static_cast<int64_t>(i) * c.n_embd, model_->output_norm().data(), c.n_embd,
                     c.rms_norm_eps, output_rows_.data() + output_rows_.size() - static_cast<size_t>(c.n_embd));
    }
    const auto n_out = static_cast<int64_t>(output_rows_.size()) / c.n_embd;
    if (tap_ != nullptr && n_out > 0) {
        tap_->on_tensor({"output_norm", -1, output_rows_.data(), n_out, c.n_embd, {}});
    }
    matmul(model_->output(), output_rows_.data(), n_out, logits, pool_, scratch_);
}

void CpuBackend::publish(const char* suffix, int layer, const std::vector<float>& data, int64_t cols,
                         std::span<const BatchToken> tokens) {
    if (tap_ == nullptr) return;
    const std::string name = layer < 0 ? std::string(suffix) : "blk." + std::to_string(layer) + "." + suffix;
    tap_->on_tensor({name, layer, data.data(), static_cast<int64_t>(tokens.size()), cols, tokens});
}

}  // namespace inferscope
