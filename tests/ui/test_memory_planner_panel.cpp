// The memory planner panel driven through its controls: every charted point and table row
// is the engine's plan_memory_budget() for the same parameters.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLogValueAxis>
#include <QSpinBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>
#include <cmath>

#include "engine/plan/memory_budget.h"
#include "ui/chart_export.h"
#include "ui/panels/memory_planner_panel.h"

namespace inferscope::ui {
namespace {

// The per-format curves (tokens per user at 1 ... max_gib GiB) and the chosen point, as the
// engine computes them; on the log axis (the default) points of 0 tokens, which it cannot
// show, are left out.
void expect_chart_matches_engine(const MemoryPlannerPanel& panel, const BudgetModel& model, const BudgetQuery& query,
                                 int max_gib) {
    const PlotData data = panel.plot_data();
    const bool log = panel.log_scale(Qt::Vertical);
    const auto& formats = MemoryPlannerPanel::weight_formats();
    ASSERT_EQ(data.series.size(), static_cast<qsizetype>(formats.size() + 1));
    for (size_t f = 0; f < formats.size(); ++f) {
        QList<QPointF> expected;
        for (int gib = 1; gib <= max_gib; ++gib) {
            BudgetQuery at = query;
            at.weights = formats[f];
            at.memory_gib = gib;
            const auto tokens = static_cast<double>(plan_memory_budget(model, at).tokens_per_user);
            if (tokens > 0 || !log) expected.append(QPointF(gib, tokens));
        }
        EXPECT_EQ(QList<QPointF>(data.series[static_cast<qsizetype>(f)].points), expected) << formats[f];
    }
    const auto chosen_tokens = static_cast<double>(plan_memory_budget(model, query).tokens_per_user);
    const QVector<QPointF>& chosen = data.series.back().points;
    ASSERT_EQ(chosen.size(), chosen_tokens > 0 || !log ? 1 : 0);
    if (!chosen.isEmpty()) {
        EXPECT_EQ(chosen.front(), QPointF(query.memory_gib, chosen_tokens));
    }
}

// The table row of `model` and the query's weight format is selected and shows the engine's numbers.
void expect_selected_row_matches_engine(const MemoryPlannerPanel& panel, const BudgetModel& model,
                                        const BudgetQuery& query) {
    const QList<QTableWidgetItem*> selected = panel.table()->selectedItems();
    ASSERT_FALSE(selected.isEmpty());
    const int row = selected.front()->row();
    const BudgetRow expected = plan_memory_budget(model, query);
    EXPECT_EQ(panel.table()->item(row, 0)->text().toStdString(), model.name);
    EXPECT_EQ(panel.table()->item(row, 1)->text().toStdString(), query.weights);
    EXPECT_EQ(panel.table()->item(row, 5)->text().toLongLong(), expected.max_resident_tokens);
    EXPECT_EQ(panel.table()->item(row, 6)->text().toLongLong(), expected.tokens_per_user);
}

TEST(MemoryPlannerPanel, OpensOnThirteenBillionOnEightGiB) {
    MemoryPlannerPanel panel;
    const BudgetQuery q = panel.query();
    EXPECT_EQ(panel.chosen_model().name, "13b");
    EXPECT_EQ(q.memory_gib, 8.0);
    EXPECT_EQ(q.weights, "int4");
    EXPECT_EQ(q.kv_dtype, "f16");
    EXPECT_EQ(q.users, 1);
    EXPECT_EQ(q.reserve_gib, 1.5);
    // By hand: 8 x 2^30 - 13e9 x 4.125 / 8 - 1.5 x 2^30 = 276,196,856 bytes of KV room;
    // 2 x 40 layers x 40 heads x 128 dims x 2 bytes = 819,200 bytes per token -> 337 tokens.
    EXPECT_EQ(panel.plot_data().series.back().points.front(), QPointF(8, 337));
    EXPECT_TRUE(panel.lesson()->text().contains(QLatin1String("337 tokens"))) << panel.lesson()->text().toStdString();
    EXPECT_TRUE(panel.lesson()->text().contains(QLatin1String("819200 bytes per token")));
    expect_chart_matches_engine(panel, budget_model_preset("13b"), q, MemoryPlannerPanel::kChartMaxGiB);
    expect_selected_row_matches_engine(panel, budget_model_preset("13b"), q);
    EXPECT_EQ(panel.table()->rowCount(), 4 * 3);  // every preset x every format
    // A model whose weights alone exceed 8 GiB has no KV room: the table says so.
    int overflowing = 0;
    for (int row = 0; row < panel.table()->rowCount(); ++row) {
        const QString room = panel.table()->item(row, 4)->text();
        EXPECT_FALSE(room.startsWith(QLatin1Char('-'))) << room.toStdString();
        if (room == QLatin1String("does not fit")) {
            ++overflowing;
            EXPECT_EQ(panel.table()->item(row, 5)->text(), QStringLiteral("0"));
        }
    }
    EXPECT_GT(overflowing, 0);
}

TEST(MemoryPlannerPanel, EveryControlRecomputesTheChartAndTable) {
    MemoryPlannerPanel panel;
    panel.show();
    QTest::keyClick(panel.weights_combo(), Qt::Key_Up);  // int4 -> int8
    EXPECT_EQ(panel.query().weights, "int8");
    panel.kv_dtype_combo()->setCurrentIndex(panel.kv_dtype_combo()->findData(QStringLiteral("q8_0")));
    panel.memory_combo()->setCurrentIndex(panel.memory_combo()->findData(24.0));
    panel.model_combo()->setCurrentIndex(1);  // 7b
    panel.users_spin()->selectAll();
    QTest::keyClicks(panel.users_spin(), QStringLiteral("4"));
    const BudgetQuery q = panel.query();
    EXPECT_EQ(q.kv_dtype, "q8_0");
    EXPECT_EQ(q.memory_gib, 24.0);
    EXPECT_EQ(q.users, 4);
    EXPECT_EQ(panel.chosen_model().name, "7b");
    // By hand: 24 x 2^30 - 7e9 - 1.5 x 2^30 = 17,159,191,040 bytes over
    // 2 x 32 x 8 x 128 x 34/32 = 69,632 bytes per token -> 246,426 tokens, 61,606 per user.
    EXPECT_EQ(panel.plot_data().series.back().points.front(), QPointF(24, 61606));
    expect_chart_matches_engine(panel, budget_model_preset("7b"), q, MemoryPlannerPanel::kChartMaxGiB);
    expect_selected_row_matches_engine(panel, budget_model_preset("7b"), q);
}

TEST(MemoryPlannerPanel, CustomMemoryWidensTheChart) {
    MemoryPlannerPanel panel;
    EXPECT_FALSE(panel.custom_memory()->isEnabled());
    panel.memory_combo()->setCurrentIndex(panel.memory_combo()->count() - 1);  // Custom
    ASSERT_TRUE(panel.custom_memory()->isEnabled());
    panel.custom_memory()->setValue(100.5);
    const BudgetQuery q = panel.query();
    EXPECT_EQ(q.memory_gib, 100.5);
    expect_chart_matches_engine(panel, budget_model_preset("13b"), q, 101);
}

TEST(MemoryPlannerPanel, WeightsThatDoNotFitLeaveNoTokens) {
    MemoryPlannerPanel panel;
    panel.weights_combo()->setCurrentIndex(panel.weights_combo()->findData(QStringLiteral("fp16")));
    // 13e9 x 2 bytes = 24.2 GiB of weights on an 8 GiB card: no point on the log axis, which
    // cannot show 0; a point at 0 on the linear one.
    EXPECT_TRUE(panel.log_scale(Qt::Vertical));
    EXPECT_TRUE(panel.plot_data().series.back().points.isEmpty());
    EXPECT_TRUE(panel.plot_data().title.contains(QLatin1String("does not fit")))
        << panel.plot_data().title.toStdString();
    panel.set_log_scale(Qt::Vertical, false);
    EXPECT_EQ(panel.plot_data().series.back().points.front(), QPointF(8, 0));
    expect_chart_matches_engine(panel, budget_model_preset("13b"), panel.query(), MemoryPlannerPanel::kChartMaxGiB);
}

TEST(MemoryPlannerPanel, TheLogScaleSwapsTheAxisAndKeepsEverySeriesOnIt) {
    MemoryPlannerPanel panel;
    ASSERT_TRUE(panel.log_scale(Qt::Vertical));  // tokens span decades: log by default
    const auto* log_axis = qobject_cast<const QLogValueAxis*>(panel.current_axis(Qt::Vertical));
    ASSERT_NE(log_axis, nullptr);
    // The axis spans whole decades around the plotted tokens, a twentieth of a decade more at
    // each end, the example's 337 above its floor.
    EXPECT_LE(log_axis->min(), 337);
    EXPECT_GT(log_axis->min(), 0);
    const double floor_decade = std::log10(log_axis->min()) + 0.05;
    EXPECT_NEAR(floor_decade, std::round(floor_decade), 1e-9);
    for (QAbstractSeries* series : panel.chart()->series()) {
        EXPECT_TRUE(series->attachedAxes().contains(panel.current_axis(Qt::Vertical))) << series->name().toStdString();
        EXPECT_EQ(series->attachedAxes().size(), 2);
    }
    panel.set_log_scale(Qt::Vertical, false);
    EXPECT_NE(qobject_cast<const QValueAxis*>(panel.current_axis(Qt::Vertical)), nullptr);
    EXPECT_EQ(panel.chart()->axes(Qt::Vertical).size(), 1);
    for (QAbstractSeries* series : panel.chart()->series()) {
        EXPECT_TRUE(series->attachedAxes().contains(panel.current_axis(Qt::Vertical)));
    }
    EXPECT_EQ(panel.plot_data().y_label, QStringLiteral("tokens per user"));
}

TEST(MemoryPlannerPanel, TheLoadedModelIsAChoice) {
    MemoryPlannerPanel panel;
    ModelSummary summary;
    summary.name = QStringLiteral("tiny");
    summary.parameters = 260000;
    summary.config.n_layer = 5;
    summary.config.n_head_kv = 4;
    summary.config.head_dim = 8;
    panel.set_model(summary);
    ASSERT_EQ(panel.model_combo()->count(), 5);
    panel.model_combo()->setCurrentIndex(4);
    const BudgetModel loaded{"tiny", 260000.0, 5, 4, 8};
    EXPECT_EQ(panel.chosen_model().parameters, loaded.parameters);
    expect_chart_matches_engine(panel, loaded, panel.query(), MemoryPlannerPanel::kChartMaxGiB);
    expect_selected_row_matches_engine(panel, loaded, panel.query());
    EXPECT_EQ(panel.table()->rowCount(), 5 * 3);

    // Another model replaces it and stays chosen; one without a shape is not offered.
    summary.name = QStringLiteral("other");
    panel.set_model(summary);
    EXPECT_EQ(panel.model_combo()->count(), 5);
    EXPECT_EQ(panel.chosen_model().name, "other");
    panel.set_model(ModelSummary{});
    EXPECT_EQ(panel.model_combo()->count(), 4);
    EXPECT_EQ(panel.table()->rowCount(), 4 * 3);
    expect_chart_matches_engine(panel, panel.chosen_model(), panel.query(), MemoryPlannerPanel::kChartMaxGiB);
}

TEST(MemoryPlannerPanel, ExportsThePlottedData) {
    MemoryPlannerPanel panel;
    panel.users_spin()->setValue(3);
    QTemporaryDir dir;
    const QString csv_path = dir.filePath(QStringLiteral("memory.csv"));
    ASSERT_TRUE(export_chart(panel, csv_path, ExportFormat::Csv).isEmpty());
    QFile csv(csv_path);
    ASSERT_TRUE(csv.open(QIODevice::ReadOnly));
    EXPECT_EQ(csv.readAll(), plot_data_to_csv(panel.plot_data()));
    const QString png_path = dir.filePath(QStringLiteral("memory.png"));
    ASSERT_TRUE(export_chart(panel, png_path, ExportFormat::Png).isEmpty());
    QFile png(png_path);
    ASSERT_TRUE(png.open(QIODevice::ReadOnly));
    EXPECT_TRUE(png.readAll().startsWith(QByteArray("\x89PNG\r\n\x1a\n", 8)));
}

}  // namespace
}  // namespace inferscope::ui
