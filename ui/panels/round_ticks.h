#pragma once
// Axis ranges and tick steps a reader can take in at a glance: 0, 100, 200 rather than
// 5.95, 11.9; used by every chart panel that fits its axes to its data.

namespace inferscope::ui {

struct RoundTicks {
    double min = 0;   // a multiple of step, <= the data's low end
    double max = 1;   // a multiple of step, >= the data's high end
    double step = 1;  // 1, 2, 2.5 or 5 times a power of ten
    int decimals = 0; // digits after the point that write every tick exactly (0.25 -> 2, 50 -> 0)
};

// Digits after the point needed to write multiples of `step` exactly, for round steps.
int decimals_for_step(double step);

// Round limits and step covering [low, high] in about `target_intervals` intervals (the round
// step nearest to the raw one). `integers`: the step is a whole number (no 2.5, nothing below 1),
// for axes that count steps or tokens. A degenerate or non-finite range gives [low, low + 1].
RoundTicks round_ticks(double low, double high, int target_intervals = 5, bool integers = false);

}  // namespace inferscope::ui
