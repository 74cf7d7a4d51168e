#pragma once
// Repeated lab measurements: the "Repeats" box each timing lab shows (how many timed runs make
// one result) and how a repeated result is written, mean ± spread as llama-bench prints it,
// flagged when the spread exceeds a fifth of the mean.
#include <QString>

#include "engine/core/sample_stats.h"

class QSpinBox;
class QWidget;

namespace inferscope::ui {

constexpr int kDefaultRepeats = 3;
constexpr int kMaxRepeats = 20;

// A spin box of 1 … kMaxRepeats timed runs, kDefaultRepeats to start with, with its tooltip.
QSpinBox* make_repeats_box();

// "1234.5 ± 12.3" at `decimals` places; "… (noisy: ±27 %)" when stats.noisy().
QString format_mean_spread(const SampleStats& stats, int decimals);

// The stats of a mean and a standard deviation already computed (a bench row's; count 0:
// not known).
SampleStats stats_of(double mean, double stddev);

// The spread, in percent of the mean, above which a result is flagged noisy.
int noisy_percent();

}  // namespace inferscope::ui
