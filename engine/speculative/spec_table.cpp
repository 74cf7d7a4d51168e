#include "engine/speculative/spec_table.h"

#include <cmath>
#include <string>

#include "engine/core/error.h"

namespace inferscope {

double expected_tokens_per_verify(double alpha, int gamma) {
    if (!(alpha >= 0.0 && alpha <= 1.0)) {
        throw InvalidArgument("acceptance rate alpha must be within [0, 1], got " + std::to_string(alpha));
    }
    if (gamma < 1) throw InvalidArgument("gamma (draft tokens per verify) must be at least 1, got " + std::to_string(gamma));
    // The geometric sum 1 + alpha + ... + alpha^gamma; its closed form divides by zero at 1.
    if (alpha == 1.0) return gamma + 1.0;
    return (1.0 - std::pow(alpha, gamma + 1)) / (1.0 - alpha);
}

double speculative_speedup(double alpha, int gamma, double cost_ratio) {
    if (!(cost_ratio >= 0.0) || !std::isfinite(cost_ratio)) {
        throw InvalidArgument("cost ratio c (draft step / target step) must be a finite number >= 0, got " +
                              std::to_string(cost_ratio));
    }
    return expected_tokens_per_verify(alpha, gamma) / (gamma * cost_ratio + 1.0);
}

std::vector<SpecTableRow> speculative_table(const std::vector<double>& alphas, const std::vector<int>& gammas,
                                            const std::vector<double>& cost_ratios) {
    if (alphas.empty() || gammas.empty() || cost_ratios.empty()) {
        throw InvalidArgument("the table needs at least one alpha, one gamma and one cost ratio");
    }
    std::vector<SpecTableRow> rows;
    for (double alpha : alphas) {
        for (int gamma : gammas) {
            for (double c : cost_ratios) {
                rows.push_back({alpha, gamma, c, expected_tokens_per_verify(alpha, gamma), speculative_speedup(alpha, gamma, c)});
            }
        }
    }
    return rows;
}

}  // namespace inferscope
