#pragma once
// The analytic model of speculative decoding (Leviathan et al. 2023, section 3): with each
// proposal accepted independently with probability alpha, one verify pass of gamma
// proposals yields (1 - alpha^(gamma+1)) / (1 - alpha) tokens on average (gamma + 1 when
// alpha = 1), and costs gamma draft steps plus one target step, so the speed-up over plain
// decoding is that expectation / (gamma * c + 1), c = draft step time / target step time.
#include <vector>

namespace inferscope {

// InvalidArgument unless 0 <= alpha <= 1 and gamma >= 1.
double expected_tokens_per_verify(double alpha, int gamma);
// InvalidArgument as above, and unless cost_ratio >= 0.
double speculative_speedup(double alpha, int gamma, double cost_ratio);

struct SpecTableRow {
    double alpha = 0;
    int gamma = 0;
    double cost_ratio = 0;
    double expected_tokens_per_verify = 0;
    double speedup = 0;  // > 1: faster than plain decoding
};

// Every combination, nested alpha, then gamma, then cost.
std::vector<SpecTableRow> speculative_table(const std::vector<double>& alphas, const std::vector<int>& gammas,
                                            const std::vector<double>& cost_ratios);

}  // namespace inferscope
