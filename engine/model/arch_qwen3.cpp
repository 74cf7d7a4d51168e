// Qwen3 (dense): Qwen2's layout without q/k/v biases, plus an RMS norm of every query and
// key head (attn_q_norm, attn_k_norm, one weight vector shared by the heads) before RoPE.
// The head dimension comes from attention.key_length, so n_head x head_dim may differ from
// n_embd (Qwen3-0.6B: 16 x 128 = 2048 against 1024). NeoX RoPE, as llama.cpp applies it.
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"

namespace inferscope {
namespace {

ModelConfig read_qwen3_config(const GgufFile& file) {
    ModelConfig config = read_common_config(file, "qwen3");
    config.rope_style = RopeStyle::Neox;
    config.has_qk_norm = true;
    return config;
}

}  // namespace

const Architecture& qwen3_architecture() {
    static const Architecture arch{"qwen3", "Qwen3 (dense)", &read_qwen3_config};
    return arch;
}

}  // namespace inferscope
