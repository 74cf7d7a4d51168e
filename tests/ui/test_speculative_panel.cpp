// The analytic speculative-decoding panel driven through its sliders: the curve is the
// engine's speculative_speedup() for gamma = 1 ... 16 at the sliders' alpha and c.
#include <gtest/gtest.h>

#include <QFile>
#include <QLabel>
#include <QSlider>
#include <QTemporaryDir>
#include <QTest>

#include "engine/speculative/spec_table.h"
#include "ui/chart_export.h"
#include "ui/panels/speculative_panel.h"

namespace inferscope::ui {
namespace {

void expect_curve_matches_engine(const SpeculativePanel& panel) {
    const PlotData data = panel.plot_data();
    ASSERT_EQ(data.series.size(), 4);  // speed-up curve, break-even, chosen gamma, measured point (empty)
    const QVector<QPointF>& curve = data.series[0].points;
    ASSERT_EQ(curve.size(), SpeculativePanel::kMaxGamma);
    for (int gamma = 1; gamma <= SpeculativePanel::kMaxGamma; ++gamma) {
        EXPECT_EQ(curve[gamma - 1], QPointF(gamma, speculative_speedup(panel.alpha(), gamma, panel.cost_ratio())))
            << "gamma " << gamma;
    }
    EXPECT_EQ(data.series[2].points,
              QVector<QPointF>(
                  {QPointF(panel.gamma(), speculative_speedup(panel.alpha(), panel.gamma(), panel.cost_ratio()))}));
}

TEST(SpeculativePanel, OpensOnTheWorkedExample) {
    SpeculativePanel panel;
    EXPECT_EQ(panel.alpha(), 0.9);
    EXPECT_EQ(panel.gamma(), 8);
    EXPECT_EQ(panel.cost_ratio(), 0.1);
    // By hand: (1 - 0.9^9) / 0.1 = 6.1258 tokens per verify over 8 x 0.1 + 1 = 1.8 -> 3.40x.
    EXPECT_NEAR(panel.plot_data().series[2].points.front().y(), 3.4032, 1e-4);
    EXPECT_TRUE(panel.plot_data().title.contains(QLatin1String("3.40"))) << panel.plot_data().title.toStdString();
    // alpha 0.3: (1 - 0.3^9) / 0.7 = 1.4286 / 1.8 = 0.79x.
    EXPECT_TRUE(panel.lesson()->text().contains(QLatin1String("3.40")));
    EXPECT_TRUE(panel.lesson()->text().contains(QLatin1String("0.79"))) << panel.lesson()->text().toStdString();
    EXPECT_TRUE(panel.readout()->text().contains(QLatin1String("6.13 tokens per verify")))
        << panel.readout()->text().toStdString();
    expect_curve_matches_engine(panel);
}

TEST(SpeculativePanel, EverySliderRecomputesTheCurve) {
    SpeculativePanel panel;
    panel.show();
    QTest::keyClick(panel.alpha_slider(), Qt::Key_PageDown);  // 0.9 -> 0.8
    EXPECT_EQ(panel.alpha_slider()->value(), 80);
    expect_curve_matches_engine(panel);
    QTest::keyClick(panel.cost_slider(), Qt::Key_Right);  // 0.10 -> 0.11
    EXPECT_EQ(panel.cost_slider()->value(), 11);
    expect_curve_matches_engine(panel);
    QTest::keyClick(panel.gamma_slider(), Qt::Key_Left);  // 8 -> 7
    EXPECT_EQ(panel.gamma(), 7);
    expect_curve_matches_engine(panel);
    // By hand: (1 - 0.8^8) / 0.2 = 4.1611 over 7 x 0.11 + 1 = 1.77 -> 2.3509x.
    EXPECT_NEAR(panel.plot_data().series[2].points.front().y(), 2.3509, 1e-4);
}

TEST(SpeculativePanel, TheEdgesOfTheSlidersStayFinite) {
    SpeculativePanel panel;
    panel.alpha_slider()->setValue(SpeculativePanel::kSliderSteps);  // alpha = 1: every draft token accepted
    panel.cost_slider()->setValue(0);
    expect_curve_matches_engine(panel);
    EXPECT_EQ(panel.plot_data().series[0].points.back(),
              QPointF(SpeculativePanel::kMaxGamma, SpeculativePanel::kMaxGamma + 1.0));
    panel.alpha_slider()->setValue(0);  // nothing accepted: one token per verify
    panel.cost_slider()->setValue(SpeculativePanel::kSliderSteps);
    expect_curve_matches_engine(panel);
    EXPECT_EQ(panel.plot_data().series[2].points.front().y(), 1.0 / (8 * 1.0 + 1.0));
    EXPECT_TRUE(panel.readout()->text().contains(QLatin1String("slower"))) << panel.readout()->text().toStdString();
}

TEST(SpeculativePanel, ExportsThePlottedData) {
    SpeculativePanel panel;
    panel.alpha_slider()->setValue(55);
    QTemporaryDir dir;
    const QString json_path = dir.filePath(QStringLiteral("spec.json"));
    ASSERT_TRUE(export_chart(panel, json_path, ExportFormat::Json).isEmpty());
    QFile json(json_path);
    ASSERT_TRUE(json.open(QIODevice::ReadOnly));
    EXPECT_EQ(json.readAll(), plot_data_to_json(panel.plot_data()));
    const QString svg_path = dir.filePath(QStringLiteral("spec.svg"));
    ASSERT_TRUE(export_chart(panel, svg_path, ExportFormat::Svg).isEmpty());
    QFile svg(svg_path);
    ASSERT_TRUE(svg.open(QIODevice::ReadOnly));
    EXPECT_TRUE(svg.readAll().contains("<svg"));
}

}  // namespace
}  // namespace inferscope::ui
