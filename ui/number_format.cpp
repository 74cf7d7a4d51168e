#include "ui/number_format.h"

#include <QLocale>
#include <algorithm>
#include <cmath>

namespace inferscope::ui {
namespace {

// Zeros after the last significant decimal go, as %g drops them.
QString without_trailing_zeros(QString text, QChar decimal_point) {
    if (!text.contains(decimal_point)) return text;
    while (text.endsWith(QLatin1Char('0'))) text.chop(1);
    if (text.endsWith(decimal_point)) text.chop(1);
    return text;
}

}  // namespace

QString format_number(double value, int significant_digits) {
    if (std::isnan(value)) return QStringLiteral("nan");
    if (std::isinf(value)) return value > 0 ? QStringLiteral("∞") : QStringLiteral("−∞");
    if (value == 0) return QStringLiteral("0");
    const int digits = std::max(1, significant_digits);
    const double magnitude = std::fabs(value);
    const QLocale locale;
    auto exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    if (magnitude >= 1e15 || magnitude < 1e-9) {
        double mantissa = value / std::pow(10.0, exponent);
        if (std::fabs(std::round(mantissa * std::pow(10.0, digits - 1))) >= std::pow(10.0, digits)) {
            mantissa /= 10;  // 9.9996 rounded up to 10.00
            ++exponent;
        }
        return QStringLiteral("%1 × 10^%2")
            .arg(without_trailing_zeros(locale.toString(mantissa, 'f', digits - 1), locale.decimalPoint().front()))
            .arg(exponent);
    }
    const int decimals = std::max(0, digits - 1 - exponent);
    const double unit = std::pow(10.0, std::max(0, exponent - digits + 1));  // rounds away digits beyond the count
    const double rounded = decimals > 0 ? value : std::round(value / unit) * unit;
    return without_trailing_zeros(locale.toString(rounded, 'f', decimals), locale.decimalPoint().front());
}

}  // namespace inferscope::ui
