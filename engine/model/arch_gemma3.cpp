// Gemma 3 (text): embeddings scaled by sqrt(n_embd); four RMS norms per block (attn_norm,
// post_attention_norm, ffn_norm, post_ffw_norm) plus per-head Q/K norms; GeGLU with the
// tanh GELU; tied output. Layers alternate between local (sliding-window) attention with
// RoPE base 10000 and global attention with the file's RoPE base and scaling. The stored
// norm weights are the multipliers themselves: llama.cpp's converter already added
// Gemma's "1 +", so nothing is added here.
#include <cmath>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"

namespace inferscope {
namespace {

// Which layers are local, as llama.cpp's set_swa_pattern derives it from the period n:
// layer il is local iff il % n < n - 1 (every n-th layer is global; n = 0: all local).
// Without the key llama.cpp assumes 6, which is what real Gemma 3 files need.
std::vector<uint8_t> gemma3_local_layers(const GgufFile& file, int n_layer) {
    const std::string key = "gemma3.attention.sliding_window_pattern";
    const uint64_t period = file.get_u64(key, 6);
    if (period > 4096) {
        throw GgufError(file.path(), file.metadata_offset(key),
                        "sliding-window pattern " + std::to_string(period) + " is out of range (0..4096)");
    }
    std::vector<uint8_t> local(static_cast<size_t>(n_layer));
    for (int il = 0; il < n_layer; ++il) {
        local[static_cast<size_t>(il)] = period == 0 || static_cast<uint64_t>(il) % period < period - 1;
    }
    return local;
}

ModelConfig read_gemma3_config(const GgufFile& file) {
    ModelConfig config = read_common_config(file, "gemma3");
    config.rope_style = RopeStyle::Neox;
    config.has_qk_norm = true;
    config.has_post_norms = true;
    config.ffn_activation = FfnActivation::GeluTanh;
    config.embedding_scale = std::sqrt(static_cast<float>(config.n_embd));
    // llama.cpp (hparams of LLM_ARCH_GEMMA3): the 27B size (62 layers) scales queries by
    // 1/sqrt(n_embd / n_head), every other size by 1/sqrt(head_dim).
    if (config.n_layer == 62) config.attention_scale = 1.0f / std::sqrt(static_cast<float>(config.n_embd / config.n_head));
    const std::string window_key = "gemma3.attention.sliding_window";
    const uint64_t window = file.get_u64(window_key);
    if (window == 0 || window > (1u << 24)) {
        throw GgufError(file.path(), file.metadata_offset(window_key),
                        "sliding window " + std::to_string(window) + " is out of range (1..16777216)");
    }
    config.sliding_window = static_cast<int>(window);
    config.local_layers = gemma3_local_layers(file, config.n_layer);
    config.rope_freq_base_local = positive_finite_float(file, "gemma3.rope.freq_base_swa", 10000.0);
    return config;
}

}  // namespace

const Architecture& gemma3_architecture() {
    static const Architecture arch{"gemma3", "Gemma 3 (text)", &read_gemma3_config};
    return arch;
}

}  // namespace inferscope
