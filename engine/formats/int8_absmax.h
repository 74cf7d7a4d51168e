#pragma once
// Symmetric absmax INT8, the one rule shared by the activation analysis (engine/probes) and
// the INT8 activations of the matmuls (engine/backend/cpu/activation_quant.h):
// scale = max|h| / 127 over the scale's group, q = clamp(round(h / scale), -127, 127) with
// round half away from zero (std::round), h_hat = q * scale. A group whose max is 0 has
// scale 0 and every q = 0, so 255 codes (-127..127) are available.
#include <algorithm>
#include <cmath>

namespace inferscope {

inline constexpr int kInt8MaxCode = 127;

// The INT8 code of h under `scale`.
inline int int8_code(float h, float scale) {
    if (scale == 0.0f) return 0;
    // The clamp only matters for values beyond the group's own max, which cannot happen for
    // absmax scales but keeps the code in range.
    const float rounded = std::round(h / scale);
    return static_cast<int>(std::clamp(rounded, static_cast<float>(-kInt8MaxCode), static_cast<float>(kInt8MaxCode)));
}

// The absmax scale of a group whose largest magnitude is max_abs.
inline float int8_scale(float max_abs) { return max_abs / static_cast<float>(kInt8MaxCode); }

}  // namespace inferscope
