#include "ui/number_format.h"

#include <QLocale>
#include <QObject>
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

QString format_relative_change(double value, double reference) {
    if (!std::isfinite(value) || !std::isfinite(reference) || reference == 0) return QObject::tr("not finite");
    const double ratio = value / reference;
    if (ratio > 10 || ratio < 0.1) return QObject::tr("\u00d7%1").arg(format_number(ratio, 3));
    const double percent = 100.0 * (ratio - 1.0);
    return QObject::tr("%1%2 %").arg(percent >= 0 ? QStringLiteral("+") : QString(), format_number(percent, 3));
}

QString format_bytes_compact(qint64 bytes) {
    const ByteUnit unit = byte_unit_for(static_cast<double>(bytes));
    if (unit.bytes == 1) return QObject::tr("%1 bytes").arg(QLocale().toString(bytes));
    return QObject::tr("%1 %2").arg(static_cast<double>(bytes) / unit.bytes, 0, 'f', 1).arg(unit.name);
}

QString format_bytes(qint64 bytes) {
    if (bytes < 1024) return format_bytes_compact(bytes);
    return QObject::tr("%1 (%2 bytes)").arg(format_bytes_compact(bytes), QLocale().toString(bytes));
}

ByteUnit byte_unit_for(double max_bytes) {
    static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    ByteUnit unit{1.0, QString()};
    int index = 0;
    while (max_bytes >= 1024.0 * unit.bytes && index < 4) {
        unit.bytes *= 1024.0;
        ++index;
    }
    unit.name = QString::fromLatin1(kUnits[index]);
    return unit;
}

}  // namespace inferscope::ui
