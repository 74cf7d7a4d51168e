#pragma once
// How many tokens a Vulkan pass may take so that one submission stays short enough for a
// display driver's watchdog, which resets a GPU that runs one submission too long (Windows
// after 2 s). Vulkan-free, so it is tested without a device.
#include <chrono>

namespace inferscope::gpu {

// The device time a pass aims to stay under, and the fewest tokens a shortened pass takes.
inline constexpr std::chrono::milliseconds kPassBudget{100};
inline constexpr int kFewestPassTokens = 16;

// The token limit for later passes after a pass of `pass_tokens` ran for `elapsed` on the
// device under the limit `limit` (at most `max_tokens`): a pass of kFewestPassTokens or more
// whose time, in proportion, lets fewer tokens than the limit fit the budget lowers the limit
// to them (not below kFewestPassTokens): a pass over the budget, and also a short one such as
// the warm-up's 16-token prompt on a slow device, so that the first long prompt is split
// before it meets the watchdog; a full pass under a quarter of the budget doubles the limit (up
// to max_tokens); otherwise the limit stays.
int fitted_pass_limit(int limit, int max_tokens, int pass_tokens, std::chrono::nanoseconds elapsed);

}  // namespace inferscope::gpu
