// Llama family: Llama 2/3, TinyLlama, SmolLM2, the llama2.c "stories" models.
// Normal (adjacent-pair) RoPE, no attention biases, optional untied output, GQA.
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"

namespace inferscope {
namespace {

ModelConfig read_llama_config(const GgufFile& file) {
    ModelConfig config = read_common_config(file, "llama");
    config.rope_style = RopeStyle::Normal;
    config.has_qkv_bias = file.find_tensor("blk.0.attn_q.bias") != nullptr;
    return config;
}

}  // namespace

const Architecture& llama_architecture() {
    static const Architecture arch{"llama", "Llama 2/3, TinyLlama, SmolLM2, llama2.c stories", &read_llama_config};
    return arch;
}

}  // namespace inferscope
