#pragma once
// Model shapes written out by hand, for tests of formulas that need no weights.
#include "engine/model/model_config.h"

namespace inferscope::testing {

// Qwen2.5-0.5B: 24 layers, 14 query heads, 2 KV heads, head dim 64.
inline ModelConfig qwen05b_config() {
    ModelConfig c;
    c.name = "qwen2.5-0.5b";
    c.n_layer = 24;
    c.n_embd = 896;
    c.n_head = 14;
    c.n_head_kv = 2;
    c.head_dim = 64;
    return c;
}

// Gemma 3 1B's attention: 26 layers, every 6th global, window 512, one KV head of 256.
inline ModelConfig gemma3_1b_config() {
    ModelConfig c;
    c.n_layer = 26;
    c.n_head = 4;
    c.n_head_kv = 1;
    c.head_dim = 256;
    c.sliding_window = 512;
    for (int il = 0; il < c.n_layer; ++il) c.local_layers.push_back(il % 6 < 5);
    return c;
}

}  // namespace inferscope::testing
