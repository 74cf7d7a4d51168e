#include "engine/backend/cpu/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/fp16.h"

namespace inferscope {

void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* out) {
    double sum_squares = 0.0;
    for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i] * x[i]);
    const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
    const float scale = 1.0f / std::sqrt(mean + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
}

void apply_rope(float* heads, int n_heads, int head_dim, const float* cos, const float* sin, const RopeParams& rope) {
    const int half = rope.rope_dim / 2;
    for (int h = 0; h < n_heads; ++h) {
        float* head = heads + static_cast<int64_t>(h) * head_dim;
        for (int i = 0; i < half; ++i) {
            const int first = rope.style == RopeStyle::Normal ? 2 * i : i;
            const int second = rope.style == RopeStyle::Normal ? 2 * i + 1 : i + half;
            const float a = head[first];
            const float b = head[second];
            head[first] = a * cos[i] - b * sin[i];
            head[second] = a * sin[i] + b * cos[i];
        }
    }
}

void swiglu_inplace(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
}

namespace {

float gelu_tanh(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
    constexpr float kCubicCoefficient = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubicCoefficient * x * x)));
}

// GELU of every F16 value, rounded to F16: the table llama.cpp evaluates GeGLU through.
const std::vector<uint16_t>& gelu_f16_table() {
    static const std::vector<uint16_t> table = [] {
        std::vector<uint16_t> values(65536);
        for (uint32_t h = 0; h < values.size(); ++h) {
            values[h] = fp32_to_fp16(gelu_tanh(fp16_to_fp32(static_cast<uint16_t>(h))));
        }
        return values;
    }();
    return table;
}

}  // namespace

void geglu_inplace(float* gate, const float* up, int64_t n) {
    const std::vector<uint16_t>& table = gelu_f16_table();
    for (int64_t i = 0; i < n; ++i) {
        const float g = gate[i];
        float gelu = 0.0f;
        if (g >= 10.0f) {
            gelu = g;
        } else if (g > -10.0f) {
            gelu = fp16_to_fp32(table[fp32_to_fp16(g)]);
        }
        gate[i] = gelu * up[i];
    }
}

void add_inplace(float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void softmax_inplace(float* scores, int64_t n) {
    const float max_score = *std::max_element(scores, scores + n);
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        scores[i] = std::exp(scores[i] - max_score);
        sum += static_cast<double>(scores[i]);
    }
    const float inv_sum = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) scores[i] *= inv_sum;
}

}  // namespace inferscope
