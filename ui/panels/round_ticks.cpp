#include "ui/panels/round_ticks.h"

#include <algorithm>
#include <cmath>

namespace inferscope::ui {

RoundTicks round_ticks(double low, double high, int target_intervals, bool integers) {
    if (!std::isfinite(low)) low = 0;
    if (!std::isfinite(high) || high <= low) high = low + 1;
    const double raw_step = (high - low) / std::max(target_intervals, 1);
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw_step)));
    // The round step nearest to the raw one (by ratio), so the interval count stays near the target.
    double step = magnitude;
    for (const double mantissa : {1.0, 2.0, 2.5, 5.0, 10.0}) {
        if (integers && mantissa == 2.5 && magnitude < 10) continue;  // 2.5, 0.25: not whole
        const double candidate = mantissa * magnitude;
        if (std::fabs(std::log(candidate / raw_step)) < std::fabs(std::log(step / raw_step))) step = candidate;
    }
    if (integers) step = std::max(1.0, std::round(step));
    RoundTicks ticks;
    ticks.step = step;
    // Limits within a billionth of a step of a tick are that tick, so rounding noise in the
    // data does not add an interval.
    ticks.min = std::floor(low / step + 1e-9) * step;
    ticks.max = std::ceil(high / step - 1e-9) * step;
    if (ticks.max <= ticks.min) ticks.max = ticks.min + step;
    ticks.decimals = decimals_for_step(step);
    return ticks;
}

int decimals_for_step(double step) {
    if (!(step > 0) || !std::isfinite(step)) return 0;
    // A round step has at most two significant digits (2.5): look for the first scale that makes it whole.
    for (int decimals = 0; decimals < 15; ++decimals) {
        const double scaled = step * std::pow(10.0, decimals);
        if (std::fabs(scaled - std::round(scaled)) < 1e-6 * scaled) return decimals;
    }
    return 15;
}

}  // namespace inferscope::ui
