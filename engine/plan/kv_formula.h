#pragma once
// The KV-cache formula for a model's shape, 2 x layers x kv_heads x head_dim x bytes per
// element per token, and what follows from it without running anything: the same model with
// full multi-head (MHA), grouped (GQA) or multi-query (MQA) attention, and the split between
// global layers and sliding-window layers at a context length.
#include <cstdint>
#include <string>
#include <vector>

#include "engine/kv/kv_cache.h"

namespace inferscope {

struct ModelConfig;

struct KvAttentionWhatIf {
    std::string attention;  // "MHA", "GQA", "MQA"
    int kv_heads = 0;
    double bytes_per_token = 0;
    double ratio_to_model = 0;  // bytes_per_token / the model's own
    bool is_model = false;      // the loaded model's own attention
};

// The formula's bytes per token for a model's shape and KV element type.
double formula_kv_bytes_per_token(const ModelConfig& config, KvDtype dtype);
// The same with `kv_heads` KV heads in place of the model's.
double formula_kv_bytes_per_token(const ModelConfig& config, int kv_heads, KvDtype dtype);
// MHA (kv_heads = query heads), GQA (the model's, when 1 < kv_heads < heads), MQA (1 KV head).
std::vector<KvAttentionWhatIf> kv_attention_what_if(const ModelConfig& config, KvDtype dtype);

// Sliding-window attention (Gemma 3): a local layer's tokens only ever read the last
// `window` positions, so a cache that drops older ones holds at most `window` tokens per
// local layer while global layers grow with the context.
struct KvWindowSplit {
    int global_layers = 0;
    int local_layers = 0;
    int window = 0;                        // tokens a local layer keeps (0: no local layers)
    double layer_bytes_per_token = 0;      // K and V of one layer for one token
    int64_t tokens = 0;
    double global_bytes = 0;               // global layers x tokens
    double local_bytes = 0;                // local layers x min(tokens, window)
    double all_global_bytes = 0;           // every layer x tokens: a cache without the window
    double windowed_bytes() const { return global_bytes + local_bytes; }
};
KvWindowSplit kv_window_split(const ModelConfig& config, KvDtype dtype, int64_t tokens);

}  // namespace inferscope
