#include "engine/backend/rope.h"

#include <cmath>

namespace inferscope {

RopeParams rope_params(const ModelConfig& c, const std::vector<float>& freq_factors) {
    RopeParams rope;
    rope.rope_dim = c.rope_dim;
    rope.freq_base = c.rope_freq_base;
    rope.freq_scale = c.rope_freq_scale;
    rope.style = c.rope_style;
    rope.freq_factors = freq_factors.empty() ? nullptr : freq_factors.data();
    return rope;
}

RopeParams local_rope_params(const ModelConfig& c, const std::vector<float>& freq_factors) {
    RopeParams rope = rope_params(c, freq_factors);
    rope.freq_base = c.rope_freq_base_local;
    rope.freq_scale = 1.0f;
    return rope;
}

void rope_angles(int32_t pos, const RopeParams& rope, float* cos_out, float* sin_out) {
    // The angle of pair i is built by repeated multiplication in float, as ggml does, so
    // that positions far into the context rotate by the same float angles as llama.cpp.
    const float theta_scale = std::pow(rope.freq_base, -2.0f / static_cast<float>(rope.rope_dim));
    const int half = rope.rope_dim / 2;
    float theta_base = static_cast<float>(pos);
    for (int i = 0; i < half; ++i) {
        const float factor = rope.freq_factors != nullptr ? rope.freq_factors[i] : 1.0f;
        const float theta = rope.freq_scale * (theta_base / factor);
        cos_out[i] = std::cos(theta);
        sin_out[i] = std::sin(theta);
        theta_base *= theta_scale;
    }
}

}  // namespace inferscope
