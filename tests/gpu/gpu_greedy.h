#pragma once
// Greedy decoding compared between two sessions (the GPU backend's and the CPU's), shared by
// the Vulkan model suites.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/session.h"
#include "support/engine_helpers.h"

namespace inferscope::testing {

inline float max_abs_diff(const std::vector<float>& a, std::span<const float> b) {
    EXPECT_EQ(a.size(), b.size());
    float worst = 0;
    for (size_t i = 0; i < a.size() && i < b.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
    return worst;
}

inline std::vector<TokenId> synthetic_prompt(int length, int vocab) {
    std::vector<TokenId> prompt;
    for (int i = 0; i < length; ++i) prompt.push_back(static_cast<TokenId>(1 + (i * 37 + 11) % (vocab - 1)));
    return prompt;
}

// Greedy decoding after `prompt` gives the CPU's tokens, each from logits within `tolerance`.
inline void expect_greedy_equal(InferenceSession& gpu, InferenceSession& cpu, const std::vector<TokenId>& prompt, int steps,
                                float tolerance, const std::string& what) {
    const auto ours = greedy_with_cache(gpu, prompt, steps);
    const auto expected = greedy_with_cache(cpu, prompt, steps);
    EXPECT_EQ(ours.ids, expected.ids) << what;
    float worst = 0;
    for (size_t i = 0; i < ours.logits.size() && i < expected.logits.size(); ++i) {
        worst = std::max(worst, max_abs_diff(ours.logits[i], expected.logits[i]));
    }
    EXPECT_LE(worst, tolerance) << what;
    std::printf("[ measured ] %s: greedy %d steps, max |logit GPU - CPU| = %.3g\n", what.c_str(), steps, worst);
}

}  // namespace inferscope::testing
