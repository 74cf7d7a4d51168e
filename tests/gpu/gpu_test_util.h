#pragma once
// Shared by the Vulkan suites: the skip when no device exists, random inputs and the
// normalised mean squared error that ggml's test-backend-ops bounds per type.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "engine/core/error.h"

namespace inferscope::testing {

// NMSE = sum((a - b)^2) / sum(b^2), b the reference.
inline double nmse(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double err = 0, ref = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
        const double d = static_cast<double>(a[i]) - static_cast<double>(b[i]);
        err += d * d;
        ref += static_cast<double>(b[i]) * static_cast<double>(b[i]);
    }
    return ref > 0 ? err / ref : err;
}

inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

// Makes `make()` or skips the test, saying why, when there is no usable Vulkan device. A
// setting that names no device or tuning (INFERSCOPE_VK_DEVICE, INFERSCOPE_VK_TUNING:
// InvalidArgument) fails the test instead of skipping it.
#define INFERSCOPE_MAKE_OR_SKIP_GPU(var, make)                                             \
    try {                                                                                  \
        var = make;                                                                        \
    } catch (const ::inferscope::InvalidArgument&) {                                       \
        throw;                                                                             \
    } catch (const ::inferscope::Error& e) {                                               \
        GTEST_SKIP() << "no usable Vulkan device (install Mesa's lavapipe): " << e.what(); \
    }

}  // namespace inferscope::testing
