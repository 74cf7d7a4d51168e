#pragma once
// Synthetic GGUF models of any shape with seeded random weights: test inputs, benchmark
// subjects, and the built-in default model that lets the app run with no download.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "engine/gguf/gguf_writer.h"

namespace inferscope {

class Model;

struct SyntheticModelSpec {
    std::string architecture = "llama";  // "llama" or "qwen2"
    std::string name = "synthetic";
    int n_layer = 4;
    int n_embd = 256;
    int n_head = 8;
    int n_head_kv = 4;
    int n_ff = 768;
    int n_vocab = 4096;
    int context_length = 2048;
    float rope_freq_base = 10000.0f;
    float rms_norm_eps = 1e-5f;
    bool tied_output = false;
    GgmlType dtype = GgmlType::F32;  // of the 2-D weights; norms and biases stay F32
    uint64_t seed = 1;
    float weight_std = 0.02f;
    float embedding_std = 1.0f;
    // Residual-stream dimensions made into activation outliers: the embedding column and
    // each block's down-projection row are scaled by outlier_scale.
    std::vector<int> outlier_dims;
    float outlier_scale = 40.0f;
    // false: the block norms scale the outlier dimensions down by outlier_scale, so the
    // linear layers see ordinary values; true: the norms leave them alone and the outliers
    // reach the inputs of q/k/v and gate/up, as in the trained models LLM.int8() studied.
    bool outliers_reach_linear_inputs = false;
    // A GGUF file whose tokenizer.ggml.* metadata is copied (its vocabulary size then sets
    // n_vocab); empty: a byte-level BPE vocabulary of n_vocab tokens.
    std::string vocab_path;
};

// Named shapes: "default" (the built-in model), "qwen2.5-0.5b", "llama-1b", "tiny-qwen2".
// InvalidArgument listing the names for an unknown one.
SyntheticModelSpec synthetic_preset(std::string_view name);
std::vector<std::string_view> synthetic_preset_names();

// Builds the GGUF (metadata, tokenizer and weights). InvalidArgument for inconsistent shapes.
GgufWriter build_synthetic_model(const SyntheticModelSpec& spec);

// The built-in default: the "default" preset, generated in memory and labelled synthetic.
std::shared_ptr<const Model> load_builtin_default_model();
inline constexpr std::string_view kBuiltinModelLabel = "built-in synthetic model (random weights, not trained)";

}  // namespace inferscope
