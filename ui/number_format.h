#pragma once
// Numbers as the panels show them: a given count of significant digits and never "e+07"
// scientific notation (2.359e+07 reads 23590000, 5.8e-05 reads 0.000058); only beyond 10^15 or
// below 10^-9 a value is written "5.83 × 10^178", which a reader still takes in.
#include <QString>

namespace inferscope::ui {

QString format_number(double value, int significant_digits = 4);

}  // namespace inferscope::ui
