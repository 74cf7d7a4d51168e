#pragma once
// Numbers as the panels show them: a given count of significant digits written out in full,
// never in e-notation, which readers misread; only values too large or too small to write out
// take the form "m × 10^k".
#include <QString>

namespace inferscope::ui {

QString format_number(double value, int significant_digits = 4);

}  // namespace inferscope::ui
