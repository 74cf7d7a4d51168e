#include "ui/labs/repeats.h"

#include <QCoreApplication>
#include <QSpinBox>

namespace inferscope::ui {

QSpinBox* make_repeats_box() {
    auto* box = new QSpinBox();
    box->setRange(1, kMaxRepeats);
    box->setValue(kDefaultRepeats);
    box->setToolTip(QCoreApplication::translate("Repeats",
                                                "Timed runs per result: the result is their mean, shown with their standard "
                                                "deviation, and flagged when that exceeds %1 % of the mean.")
                        .arg(noisy_percent()));
    return box;
}

QString format_mean_spread(const SampleStats& stats, int decimals) {
    QString text = QStringLiteral("%1 ± %2").arg(stats.mean, 0, 'f', decimals).arg(stats.stddev, 0, 'f', decimals);
    if (stats.noisy()) {
        text += QCoreApplication::translate("Repeats", " (noisy: ±%1 %)").arg(100.0 * stats.relative_spread(), 0, 'f', 0);
    }
    return text;
}

SampleStats stats_of(double mean, double stddev) {
    SampleStats stats;
    stats.mean = mean;
    stats.stddev = stddev;
    return stats;
}

int noisy_percent() { return static_cast<int>(100.0 * SampleStats::kNoisyRelativeSpread); }

}  // namespace inferscope::ui
