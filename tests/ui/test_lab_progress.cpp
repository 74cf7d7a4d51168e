// Progress text on a narrow bar: the stage elided to fit beside the percentage, whole in the
// tooltip.
#include <gtest/gtest.h>

#include <QFontMetrics>
#include <QProgressBar>

#include "ui/labs/lab_progress.h"

namespace inferscope::ui {
namespace {

TEST(LabProgress, ALongStageIsElidedToTheBarAndWholeInTheTooltip) {
    QProgressBar bar;
    bar.setRange(0, 1000);
    bar.resize(160, 24);
    const QString stage = QStringLiteral("measured 256 prompt tokens, 256 cached tokens");
    show_progress_text(bar, stage);
    EXPECT_EQ(bar.toolTip(), stage);
    EXPECT_TRUE(bar.format().endsWith(QLatin1String(" %p%"))) << bar.format().toStdString();
    EXPECT_TRUE(bar.format().contains(QChar(0x2026))) << bar.format().toStdString();  // "…"
    const QString shown = bar.format().chopped(4);
    EXPECT_LE(QFontMetrics(bar.font()).horizontalAdvance(shown), bar.width());

    bar.resize(2000, 24);
    show_progress_text(bar, stage);
    EXPECT_EQ(bar.format(), stage + QStringLiteral(" %p%"));  // room enough: whole
}

}  // namespace
}  // namespace inferscope::ui
