#pragma once
// Argument checks for every command. CLI11's own number checks let NaN through (every
// comparison with it is false) and print their bounds as "0 to 1.797e308"; these refuse
// anything that is not a finite number and state the bound as a reader would.
#include <CLI/CLI.hpp>

#include <string>

namespace inferscope::cli {

// value >= 0 (NONNEGATIVE), value > 0 (POSITIVE), lo <= value <= hi.
CLI::Validator non_negative();
CLI::Validator positive();
CLI::Validator within(double lo, double hi);

// Adds a finite-number check to every floating-point option of `app` and its subcommands,
// so that nan and inf are refused wherever a number is read.
void require_finite_floats(CLI::App& app);

}  // namespace inferscope::cli
