#pragma once
// Synthetic GGUF models of any shape with seeded random weights: test inputs, benchmark
// subjects, and the built-in synthetic model (engine/synth/builtin_models.h).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/formats/ggml_type.h"
#include "engine/gguf/gguf_writer.h"

namespace inferscope {

// The mixes of weight types llama.cpp's K-quant presets write (k_quant_mix_type).
enum class KQuantMix { None, Q4_K_M, Q5_K_M };

// What tells the mixes apart: make-model's name for one, its base type, the base's fallback
// where 256 does not divide a row, and llama.cpp's general.file_type for it.
struct KQuantMixTraits {
    KQuantMix mix;
    const char* name;
    GgmlType base, fallback;
    uint32_t llama_file_type;
};
// The mix named `name` ("q4_k_m", "q5_k_m"); nullptr for any other name.
const KQuantMixTraits* k_quant_mix_named(std::string_view name);
// `mix` is not None.
const KQuantMixTraits& k_quant_mix_traits(KQuantMix mix);

struct SyntheticModelSpec {
    std::string architecture = "llama";  // "llama", "qwen2", "qwen3" or "gemma3"
    std::string name = "synthetic";
    int n_layer = 4;
    int n_embd = 256;
    int n_head = 8;
    int n_head_kv = 4;
    int head_dim = 0;  // 0: n_embd / n_head; otherwise written as attention.key_length / value_length
    int n_ff = 768;
    int n_vocab = 4096;
    int context_length = 2048;
    float rope_freq_base = 10000.0f;
    float rms_norm_eps = 1e-5f;
    bool tied_output = false;
    // gemma3: the window of local layers and the period of global ones (every n-th layer).
    int sliding_window = 512;
    int sliding_window_pattern = 6;
    // llama: write rope_freqs.weight with Llama 3.1's frequency factors for this original
    // context (0: no factors).
    int llama3_rope_original_context = 0;
    GgmlType dtype = GgmlType::F32;  // of the 2-D weights; norms and biases stay F32
    // Not None: the mix of types llama.cpp's Q4_K_M or Q5_K_M writes instead of dtype (see k_quant_mix_type).
    KQuantMix k_quant_mix = KQuantMix::None;
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
    std::string chat_template;  // written as tokenizer.chat_template when not empty
};

// Named shapes: "default" (the built-in synthetic model), "qwen2.5-0.5b", "llama-1b", "tiny-qwen2",
// the real shapes "qwen3-0.6b", "gemma3-1b", "llama3.2-1b", and small "tiny-qwen3", "tiny-gemma3".
// InvalidArgument listing the names for an unknown one.
SyntheticModelSpec synthetic_preset(std::string_view name);
std::vector<std::string_view> synthetic_preset_names();

// The type llama.cpp's Q4_K_M (Q5_K_M) gives a weight: its base Q4_K (Q5_K), but Q6_K for the
// output projection (the embeddings where it is tied), and for attn_v and ffn_down in the layers
// use_more_bits picks (the first and last eighth, and every third between); a type whose
// 256-element blocks do not divide the row falls back: the base's fallback (Q5_0, Q5_1), Q8_0 for
// Q6_K. `layer` -1: not a layer's. `mix` is not None.
GgmlType k_quant_mix_type(KQuantMix mix, const std::string& tensor, int layer, int n_layer, int cols, bool tied_output);

// Builds the GGUF (metadata, tokenizer and weights). InvalidArgument for inconsistent shapes.
GgufWriter build_synthetic_model(const SyntheticModelSpec& spec);

}  // namespace inferscope
