#pragma once
// Small synthetic models for tests, built in memory by the engine's own generator.
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/synth/synthetic_model.h"

namespace inferscope::testing {

// A two-layer model of the given architecture: GQA (4 heads, 2 KV heads, head dim 16),
// byte-level vocabulary of 300 tokens. qwen2 gets biases and tied embeddings, llama an
// untied output; qwen3 a head dim of 32 (so q is twice n_embd); gemma3 one local layer
// with a window of 5 tokens, then a global one.
inline SyntheticModelSpec tiny_spec(const std::string& architecture, GgmlType dtype = GgmlType::F32, uint64_t seed = 7) {
    SyntheticModelSpec s;
    s.architecture = architecture;
    s.name = "test-tiny-" + architecture;
    s.n_layer = 2;
    s.n_embd = 64;
    s.n_head = 4;
    s.n_head_kv = 2;
    s.n_ff = 96;
    s.n_vocab = 300;
    s.context_length = 256;
    s.rope_freq_base = architecture == "qwen2" ? 1e6f : 10000.0f;
    s.tied_output = architecture != "llama";
    if (architecture == "qwen3") s.head_dim = 32;
    s.sliding_window = 5;
    s.sliding_window_pattern = 2;
    s.dtype = dtype;
    s.seed = seed;
    s.weight_std = 0.1f;
    return s;
}

inline std::vector<uint8_t> tiny_model_bytes(const SyntheticModelSpec& spec) {
    return build_synthetic_model(spec).to_bytes();
}

inline std::shared_ptr<const Model> tiny_model(const SyntheticModelSpec& spec) {
    return Model::from_gguf(GgufFile::from_bytes(tiny_model_bytes(spec), spec.name + ".gguf"));
}

}  // namespace inferscope::testing
