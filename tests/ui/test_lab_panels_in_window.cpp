// The lab panels in the main window: chart tabs, exported and screenshotted with the rest,
// and the loaded model offered to the memory planner.
#include <gtest/gtest.h>

#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include "ui/engine_controller.h"
#include "ui/main_window.h"
#include "ui/panels/memory_planner_panel.h"
#include "ui/panels/speculative_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

TEST(LabPanels, AreChartTabsThatExportAndScreenshot) {
    MainWindow window(false);
    QStringList names;
    for (const ChartPanel* panel : window.chart_panels()) names << panel->export_name();
    EXPECT_TRUE(names.contains(QStringLiteral("memory-planner"))) << names.join(QLatin1Char(',')).toStdString();
    EXPECT_TRUE(names.contains(QStringLiteral("speculative-speedup")));
    EXPECT_TRUE(names.contains(QStringLiteral("soft-labels")));

    QTemporaryDir dir;
    ASSERT_TRUE(window.export_all_charts(dir.path()).isEmpty());
    ASSERT_TRUE(window.save_screenshots(dir.path()).isEmpty());
    for (const QString& name :
         {QStringLiteral("memory-planner"), QStringLiteral("speculative-speedup"), QStringLiteral("soft-labels")}) {
        for (const QString& file :
             {name + QStringLiteral(".png"), name + QStringLiteral(".svg"), name + QStringLiteral(".csv"),
              name + QStringLiteral(".json"), QStringLiteral("panel-") + name + QStringLiteral(".png")}) {
            EXPECT_TRUE(QFileInfo(QDir(dir.path()).filePath(file)).size() > 0) << file.toStdString();
        }
    }
}

TEST(LabPanels, TheLoadedModelJoinsTheMemoryPlanner) {
    MainWindow window(false);
    bool loaded = false;
    QObject::connect(&window.controller(), &EngineController::model_loaded, [&] { loaded = true; });
    window.open_model(QString());  // the built-in synthetic model
    ASSERT_TRUE(wait_until([&] { return loaded && !window.controller().busy(); }, 60000));
    const ModelSummary& model = window.controller().model();
    QComboBox* models = window.memory_planner_panel().model_combo();
    ASSERT_EQ(models->count(), 5);
    models->setCurrentIndex(4);
    const BudgetModel chosen = window.memory_planner_panel().chosen_model();
    EXPECT_EQ(chosen.parameters, static_cast<double>(model.parameters));
    EXPECT_EQ(chosen.layers, model.config.n_layer);
    EXPECT_EQ(chosen.kv_heads, model.config.n_head_kv);
    EXPECT_EQ(chosen.head_dim, model.config.head_dim);
}

}  // namespace
}  // namespace inferscope::ui
