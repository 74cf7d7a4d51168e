#pragma once
// Rotary position embedding's parameters and angles, shared by the backends: the CPU backend
// rotates with a token's angles, the Vulkan backend uploads them as a table.
#include <cstdint>
#include <vector>

#include "engine/model/model_config.h"

namespace inferscope {

struct RopeParams {
    int rope_dim = 0;             // leading dimensions of each head that rotate
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;      // linear scaling of positions
    RopeStyle style = RopeStyle::Normal;
    const float* freq_factors = nullptr;  // [rope_dim / 2] divisors of each pair's angle (Llama 3), or null
};

// The model's parameters; `freq_factors` (empty: none) must outlive the result.
RopeParams rope_params(const ModelConfig& c, const std::vector<float>& freq_factors);
// The parameters of sliding-window (local) layers: the model's, with rope_freq_base_local
// as the base and no frequency scaling.
RopeParams local_rope_params(const ModelConfig& c, const std::vector<float>& freq_factors);

// cos and sin of each pair's angle at `pos` (rope_dim / 2 of each): pair i turns by
// freq_scale * pos * base^(-2i/rope_dim) / freq_factors[i]. The same for every head and layer.
void rope_angles(int32_t pos, const RopeParams& rope, float* cos_out, float* sin_out);

}  // namespace inferscope
