#include "gpu/pass_fitting.h"

#include <algorithm>

namespace inferscope::gpu {

int fitted_pass_limit(int limit, int max_tokens, int pass_tokens, std::chrono::nanoseconds elapsed) {
    if (elapsed > kPassBudget && pass_tokens > kFewestPassTokens) {
        const double share = std::chrono::duration<double>(kPassBudget) / elapsed;
        return std::max(kFewestPassTokens, static_cast<int>(pass_tokens * share));
    }
    if (pass_tokens == limit && elapsed < kPassBudget / 4) return std::min(max_tokens, 2 * limit);
    return limit;
}

}  // namespace inferscope::gpu
