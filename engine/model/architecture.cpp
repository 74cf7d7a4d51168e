#include "engine/model/architecture.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"

namespace inferscope {
namespace {

const Architecture* const kArchitectures[] = {&llama_architecture(), &qwen2_architecture(), &qwen3_architecture(),
                                              &gemma3_architecture()};

int positive_int(const GgufFile& file, const std::string& key, uint64_t value, uint64_t limit) {
    if (value == 0 || value > limit) {
        throw GgufError(file.path(), file.metadata_offset(key),
                        "metadata key \"" + key + "\" has value " + std::to_string(value) + " (allowed: 1.." +
                            std::to_string(limit) + ")");
    }
    return static_cast<int>(value);
}

// Linear RoPE scaling stretches positions; YaRN and other schemes change the angles in
// ways this engine does not implement, so such files are refused rather than run wrongly.
void read_rope_scaling(const GgufFile& file, const std::string& arch, ModelConfig& config) {
    const std::string type = file.get_string(arch + ".rope.scaling.type", "none");
    if (type == "none") return;
    if (type != "linear") {
        throw UnsupportedError(file.path() + ": RoPE scaling \"" + type + "\" is not supported (supported: none, linear)");
    }
    config.rope_freq_scale = 1.0f / positive_finite_float(file, arch + ".rope.scaling.factor", 1.0);
}

}  // namespace

std::vector<std::string_view> supported_architecture_names() {
    std::vector<std::string_view> names;
    for (const auto* arch : kArchitectures) names.push_back(arch->name);
    return names;
}

const Architecture& architecture_for(const GgufFile& file) {
    const std::string name = file.get_string("general.architecture");
    for (const auto* arch : kArchitectures) {
        if (arch->name == name) return *arch;
    }
    std::string supported;
    for (auto n : supported_architecture_names()) supported += (supported.empty() ? "" : ", ") + std::string(n);
    throw UnsupportedError(file.path() + ": unsupported architecture \"" + name + "\" (supported: " + supported + ")");
}

float positive_finite_float(const GgufFile& file, const std::string& key, double fallback) {
    const double value = file.get_f64(key, fallback);
    const auto as_float = static_cast<float>(value);
    if (!(value > 0.0) || !std::isfinite(as_float) || !(as_float > 0.0f)) {
        char shown[32];
        std::snprintf(shown, sizeof shown, "%g", value);
        throw GgufError(file.path(), file.metadata_offset(key),
                        "metadata key \"" + key + "\" has value " + shown + " (must be a positive, finite float)");
    }
    return as_float;
}

ModelConfig read_common_config(const GgufFile& file, std::string_view arch_name) {
    const std::string arch(arch_name);
    const auto key = [&](const char* suffix) { return arch + "." + suffix; };
    constexpr uint64_t kMaxDim = 1u << 20;

    ModelConfig config;
    config.architecture = arch;
    config.name = file.get_string("general.name", std::filesystem::path(file.path()).filename().string());
    config.n_layer = positive_int(file, key("block_count"), file.get_u64(key("block_count")), 4096);
    config.n_embd = positive_int(file, key("embedding_length"), file.get_u64(key("embedding_length")), kMaxDim);
    config.n_head = positive_int(file, key("attention.head_count"), file.get_u64(key("attention.head_count")), 4096);
    config.n_head_kv = positive_int(file, key("attention.head_count_kv"),
                                    file.get_u64(key("attention.head_count_kv"), static_cast<uint64_t>(config.n_head)),
                                    4096);
    config.n_ff = positive_int(file, key("feed_forward_length"), file.get_u64(key("feed_forward_length")), kMaxDim * 8);
    config.context_length = positive_int(file, key("context_length"), file.get_u64(key("context_length")), 1u << 24);
    config.rms_norm_eps = positive_finite_float(file, key("attention.layer_norm_rms_epsilon"), 1e-5);
    config.rope_freq_base = positive_finite_float(file, key("rope.freq_base"), 10000.0);

    if (!file.has(key("attention.key_length")) && config.n_embd % config.n_head != 0) {
        throw GgufError(file.path(), file.metadata_offset(key("attention.head_count")),
                        "embedding length " + std::to_string(config.n_embd) + " is not divisible by the head count " +
                            std::to_string(config.n_head));
    }
    if (config.n_head % config.n_head_kv != 0) {
        throw GgufError(file.path(), file.metadata_offset(key("attention.head_count_kv")),
                        "head count " + std::to_string(config.n_head) + " is not a multiple of the KV head count " +
                            std::to_string(config.n_head_kv));
    }
    config.head_dim = positive_int(file, key("attention.key_length"),
                                   file.get_u64(key("attention.key_length"), static_cast<uint64_t>(config.n_embd / std::max(1, config.n_head))),
                                   4096);
    if (file.get_u64(key("attention.value_length"), static_cast<uint64_t>(config.head_dim)) !=
        static_cast<uint64_t>(config.head_dim)) {
        throw UnsupportedError(file.path() + ": attention value length differs from the key length (not supported)");
    }
    read_rope_scaling(file, arch, config);
    config.rope_dim = positive_int(file, key("rope.dimension_count"),
                                   file.get_u64(key("rope.dimension_count"), static_cast<uint64_t>(config.head_dim)),
                                   static_cast<uint64_t>(config.head_dim));
    if (config.rope_dim % 2 != 0) {
        throw GgufError(file.path(), file.metadata_offset(key("rope.dimension_count")),
                        "rope dimension count " + std::to_string(config.rope_dim) + " is odd");
    }
    const GgufTensorInfo* embd = file.find_tensor("token_embd.weight");
    if (embd == nullptr) throw GgufError(file.path(), file.data_offset(), "required tensor \"token_embd.weight\" is missing");
    if (embd->dims.size() != 2 || embd->dims[0] != static_cast<uint64_t>(config.n_embd) || embd->dims[1] > (1u << 24)) {
        throw GgufError(file.path(), file.data_offset() + embd->offset,
                        "tensor \"token_embd.weight\" has shape " + embd->shape_string() + ", expected [" +
                            std::to_string(config.n_embd) + ", n_vocab]");
    }
    config.n_vocab = static_cast<int>(embd->dims[1]);
    config.tied_output = file.find_tensor("output.weight") == nullptr;
    return config;
}

}  // namespace inferscope
