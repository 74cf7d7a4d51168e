// How the timing labs write a repeated measurement: mean ± standard deviation, flagged above 20 %.
#include <gtest/gtest.h>

#include <QSpinBox>
#include <memory>
#include <vector>

#include "ui/labs/repeats.h"

namespace inferscope::ui {
namespace {

TEST(Repeats, MeanAndSpreadWithTheNoisyFlag) {
    const std::vector<double> steady = {100, 102, 98};
    EXPECT_EQ(format_mean_spread(sample_stats(steady), 1), QStringLiteral("100.0 ± 2.0"));
    const std::vector<double> noisy = {60, 100, 140};
    EXPECT_EQ(format_mean_spread(sample_stats(noisy), 0), QStringLiteral("100 ± 40 (noisy: ±40 %)"));
    EXPECT_EQ(format_mean_spread(stats_of(6223.04, 0), 1), QStringLiteral("6223.0 ± 0.0"));
    EXPECT_EQ(noisy_percent(), 20);
}

TEST(Repeats, TheBoxStartsAtThreeRunsAndAllowsOneToTwenty) {
    const std::unique_ptr<QSpinBox> box(make_repeats_box());
    EXPECT_EQ(box->value(), kDefaultRepeats);
    EXPECT_EQ(kDefaultRepeats, 3);
    EXPECT_EQ(box->minimum(), 1);
    EXPECT_EQ(box->maximum(), kMaxRepeats);
    EXPECT_TRUE(box->toolTip().contains(QLatin1String("20 %"))) << box->toolTip().toStdString();
}

}  // namespace
}  // namespace inferscope::ui
