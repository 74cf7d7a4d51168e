#pragma once
// The hyper-parameters of a decoder-only transformer, read from GGUF metadata.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace inferscope {

class GgufFile;

enum class RopeStyle {
    Normal,  // rotate adjacent pairs (2i, 2i+1): Llama
    Neox,    // rotate pairs (i, i + rope_dim/2): Qwen2, GPT-NeoX
};

enum class FfnActivation {
    Silu,      // SwiGLU: silu(gate) * up (Llama, Qwen)
    GeluTanh,  // GeGLU with the tanh approximation of GELU (Gemma)
};

struct ModelConfig {
    std::string architecture;  // the GGUF general.architecture value: "llama", "qwen2", "qwen3", "gemma3"
    std::string name;          // general.name, or the file name when absent
    int n_layer = 0;
    int n_embd = 0;
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim = 0;
    int n_ff = 0;
    int n_vocab = 0;
    int context_length = 0;
    int rope_dim = 0;  // leading dimensions of each head that RoPE rotates
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // linear RoPE scaling: positions are multiplied by this
    float rms_norm_eps = 1e-5f;
    RopeStyle rope_style = RopeStyle::Normal;
    bool has_qkv_bias = false;
    bool tied_output = false;  // no output.weight: logits use token_embd.weight
    bool has_qk_norm = false;     // per-head RMS norms of q and k before RoPE (attn_q_norm, attn_k_norm)
    bool has_post_norms = false;  // RMS norms of the attention and FFN outputs before the residual add
    FfnActivation ffn_activation = FfnActivation::Silu;
    float embedding_scale = 1.0f;  // the token embeddings are multiplied by this (Gemma: sqrt(n_embd))
    float attention_scale = 0.0f;  // multiplies q.k; 0 means 1/sqrt(head_dim)
    // Sliding-window attention: a local layer's token at position p sees positions
    // p - sliding_window < j <= p. Empty local_layers: every layer is global.
    int sliding_window = 0;
    std::vector<uint8_t> local_layers;  // [n_layer] 1 where the layer is local
    float rope_freq_base_local = 10000.0f;  // RoPE base of local layers (no scaling there)

    bool is_local_layer(int layer) const {
        return !local_layers.empty() && local_layers[static_cast<size_t>(layer)] != 0;
    }
    int local_layer_count() const {
        int count = 0;
        for (uint8_t local : local_layers) count += local != 0 ? 1 : 0;
        return count;
    }
    bool has_local_layers() const { return local_layer_count() > 0; }
    float kq_scale() const {
        return attention_scale > 0.0f ? attention_scale : 1.0f / std::sqrt(static_cast<float>(head_dim));
    }

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
    // Bytes of K and V for one token across all layers: 2 x layers x kv_heads x head_dim x element bytes.
    uint64_t kv_bytes_per_token(int element_bytes) const {
        return uint64_t{2} * static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(kv_dim()) *
               static_cast<uint64_t>(element_bytes);
    }
};

}  // namespace inferscope
