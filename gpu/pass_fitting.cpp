#include "gpu/pass_fitting.h"

#include <algorithm>

namespace inferscope::gpu {

int fitted_pass_limit(int limit, int max_tokens, int pass_tokens, std::chrono::nanoseconds elapsed) {
    // Fewer tokens carry too much of a pass's fixed cost to tell what a token costs.
    if (pass_tokens >= kFewestPassTokens && elapsed.count() > 0) {
        const double share = std::chrono::duration<double>(kPassBudget) / elapsed;
        const int fitting = std::max(kFewestPassTokens, static_cast<int>(pass_tokens * share));
        if (fitting < limit) return fitting;
    }
    if (pass_tokens == limit && elapsed < kPassBudget / 4) return std::min(max_tokens, 2 * limit);
    return limit;
}

}  // namespace inferscope::gpu
