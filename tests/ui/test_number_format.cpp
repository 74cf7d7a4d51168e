// format_number: significant digits, no "e+07" notation, powers of ten only at the extremes.
#include <gtest/gtest.h>

#include <QLocale>
#include <QRegularExpression>
#include <limits>

#include "ui/number_format.h"

namespace inferscope::ui {
namespace {

TEST(NumberFormat, SignificantDigitsWithoutScientificNotation) {
    const QLocale previous;
    QLocale::setDefault(QLocale::c());
    const struct {
        double value;
        int digits;
        const char* expected;
    } cases[] = {
        {0.12789, 4, "0.1279"},      {1.5, 4, "1.5"},          {2.0, 4, "2"},
        {23589300.0, 4, "23590000"}, {999.96, 4, "1000"},       {5.8e-5, 2, "0.000058"},
        {-0.000123456, 3, "-0.000123"}, {0.0, 4, "0"},          {146784.0, 6, "146784"},
        {5.828e178, 4, "5.828 × 10^178"}, {1e-12, 4, "1 × 10^-12"}, {9.9996e15, 4, "1 × 10^16"},
    };
    const QRegularExpression scientific(QStringLiteral("e[+-]\\d\\d"));
    for (const auto& c : cases) {
        const QString shown = format_number(c.value, c.digits);
        EXPECT_EQ(shown, QString::fromUtf8(c.expected)) << c.value;
        EXPECT_FALSE(scientific.match(shown).hasMatch()) << shown.toStdString();
    }
    EXPECT_EQ(format_number(std::numeric_limits<double>::quiet_NaN()), QStringLiteral("nan"));
    EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), QStringLiteral("∞"));
    QLocale::setDefault(previous);
}

TEST(NumberFormat, RelativeChangeIsAPercentageOrAFactor) {
    const QLocale previous;
    QLocale::setDefault(QLocale::c());
    EXPECT_EQ(format_relative_change(4.9306, 4.2847), QStringLiteral("+15.1 %"));
    EXPECT_EQ(format_relative_change(4.0, 4.2847), QStringLiteral("-6.64 %"));
    EXPECT_EQ(format_relative_change(4.2847, 4.2847), QStringLiteral("+0 %"));
    EXPECT_EQ(format_relative_change(5.828e178, 4.2847), QStringLiteral("\u00d71.36 \u00d7 10^178"));
    EXPECT_EQ(format_relative_change(5000, 4), QStringLiteral("\u00d71250"));
    EXPECT_EQ(format_relative_change(std::numeric_limits<double>::infinity(), 4), QStringLiteral("not finite"));
    QLocale::setDefault(previous);
}

}  // namespace
}  // namespace inferscope::ui
