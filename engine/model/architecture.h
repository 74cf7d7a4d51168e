#pragma once
// Per-architecture knowledge: how a GGUF file's metadata maps to a ModelConfig and which
// tensors an architecture needs. Each supported architecture lives in its own file
// (arch_llama.cpp, arch_qwen2.cpp, arch_qwen3.cpp, arch_gemma3.cpp) and registers here.
#include <string>
#include <string_view>
#include <vector>

#include "engine/model/model_config.h"

namespace inferscope {

class GgufFile;

struct Architecture {
    std::string_view name;  // the general.architecture value
    std::string_view description;
    // Reads the hyper-parameters; throws GgufError naming any missing or invalid key.
    ModelConfig (*read_config)(const GgufFile& file);
};

const Architecture& llama_architecture();
const Architecture& qwen2_architecture();
const Architecture& qwen3_architecture();
const Architecture& gemma3_architecture();

// The architecture named by general.architecture; UnsupportedError listing the supported
// names otherwise.
const Architecture& architecture_for(const GgufFile& file);
std::vector<std::string_view> supported_architecture_names();

// Shared by the architecture files: the hyper-parameters every decoder-only model stores
// under "{arch}.*", validated (positive, divisible, consistent with the tensors).
ModelConfig read_common_config(const GgufFile& file, std::string_view arch);

// A float hyperparameter (`fallback` when the key is absent) that must be positive and finite
// as a float: an infinite or NaN RoPE base or epsilon would silently turn every logit to NaN.
float positive_finite_float(const GgufFile& file, const std::string& key, double fallback);

}  // namespace inferscope
