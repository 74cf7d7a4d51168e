// Qwen2 / Qwen2.5: q/k/v projections carry biases, RoPE rotates NeoX-style half-split
// pairs (the file does not say so; the architecture implies it), rope base usually 1e6,
// embeddings usually tied to the output projection.
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/architecture.h"

namespace inferscope {
namespace {

ModelConfig read_qwen2_config(const GgufFile& file) {
    ModelConfig config = read_common_config(file, "qwen2");
    config.rope_style = RopeStyle::Neox;
    config.has_qkv_bias = true;
    return config;
}

}  // namespace

const Architecture& qwen2_architecture() {
    static const Architecture arch{"qwen2", "Qwen2, Qwen2.5", &read_qwen2_config};
    return arch;
}

}  // namespace inferscope
