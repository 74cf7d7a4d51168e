#pragma once
// The hyper-parameters of a decoder-only transformer, read from GGUF metadata.
#include <cstdint>
#include <string>

namespace inferscope {

class GgufFile;

enum class RopeStyle {
    Normal,  // rotate adjacent pairs (2i, 2i+1): Llama
    Neox,    // rotate pairs (i, i + rope_dim/2): Qwen2, GPT-NeoX
};

struct ModelConfig {
    std::string architecture;  // the GGUF general.architecture value: "llama", "qwen2"
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

    int q_dim() const { return n_head * head_dim; }
    int kv_dim() const { return n_head_kv * head_dim; }
    // Bytes of K and V for one token across all layers: 2 x layers x kv_heads x head_dim x element bytes.
    uint64_t kv_bytes_per_token(int element_bytes) const {
        return uint64_t{2} * static_cast<uint64_t>(n_layer) * static_cast<uint64_t>(kv_dim()) *
               static_cast<uint64_t>(element_bytes);
    }
};

}  // namespace inferscope
