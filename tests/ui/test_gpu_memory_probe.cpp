// The GPUs' memory budgets offered to the memory planner: which heaps count, the background
// probe against a direct listing, and the planner's use of a detected budget.
#include <gtest/gtest.h>

#include <QComboBox>
#include <cstdio>

#include "engine/core/error.h"
#include "engine/plan/memory_budget.h"
#include "gpu/vulkan_devices.h"
#include "ui/gpu_memory_probe.h"
#include "ui/panels/memory_planner_panel.h"
#include "ui/ui_test_support.h"

namespace inferscope::ui {
namespace {

using inferscope::testing::wait_until;

constexpr quint64 kGiB = quint64{1} << 30;

gpu::DeviceInfo device(const std::string& name, const std::string& type, std::vector<gpu::MemoryHeapInfo> heaps) {
    gpu::DeviceInfo d;
    d.name = name;
    d.type = type;
    d.heaps = std::move(heaps);
    return d;
}

TEST(GpuMemoryBudgets, TheLargestDeviceLocalHeapAtItsBudget) {
    const std::vector<gpu::DeviceInfo> devices = {
        device("discrete", "discrete", {{24 * kGiB, 22 * kGiB, true}, {64 * kGiB, 60 * kGiB, false}}),
        device("no budget extension", "integrated", {{2 * kGiB, 0, true}, {6 * kGiB, 0, true}}),
        device("llvmpipe", "cpu", {{32 * kGiB, 0, true}}),
        device("host memory only", "virtual", {{8 * kGiB, 8 * kGiB, false}}),
    };
    const QVector<GpuMemory> gpus = gpu_memory_budgets(devices);
    ASSERT_EQ(gpus.size(), 2);
    EXPECT_EQ(gpus[0].device, QStringLiteral("discrete"));
    EXPECT_EQ(gpus[0].budget_bytes, 22 * kGiB);  // the budget, not the heap's 24 GiB
    EXPECT_EQ(gpus[1].device, QStringLiteral("no budget extension"));
    EXPECT_EQ(gpus[1].budget_bytes, 6 * kGiB);
}

TEST(GpuMemoryBudgets, TheDeviceTheBackendWouldChooseComesFirst) {
    std::vector<gpu::DeviceInfo> devices = {device("integrated", "integrated", {{2 * kGiB, 0, true}}),
                                            device("discrete", "discrete", {{24 * kGiB, 0, true}})};
    devices[1].index = 1;
    const QVector<GpuMemory> gpus = gpu_memory_budgets(devices, 1);
    ASSERT_EQ(gpus.size(), 2);
    EXPECT_EQ(gpus[0].device, QStringLiteral("discrete"));
    EXPECT_EQ(gpus[1].device, QStringLiteral("integrated"));
}

// A GPU that lacks a requirement while a CPU driver is chosen: still listed for the planner,
// but not offered as the Vulkan backend (which would run on the CPU driver), and the offer says
// which GPU lacks what.
TEST(GpuMemoryBudgets, AGpuTheBackendWouldNotRunOnIsListedButNotOffered) {
    std::vector<gpu::DeviceInfo> devices = {device("Old GPU", "discrete", {{4 * kGiB, 0, true}}),
                                            device("llvmpipe", "cpu", {{32 * kGiB, 0, true}})};
    devices[0].shortfalls = {"128 threads per workgroup (256 needed)"};
    devices[1].index = 1;
    const QVector<GpuMemory> gpus = gpu_memory_budgets(devices, 1);
    ASSERT_EQ(gpus.size(), 1);
    EXPECT_EQ(gpus[0].device, QStringLiteral("Old GPU"));
    EXPECT_FALSE(gpus[0].runs_vulkan);
    EXPECT_EQ(gpus[0].lacks, QStringLiteral("128 threads per workgroup (256 needed)"));
    const VulkanOffer offer = vulkan_offer(gpus);
    EXPECT_TRUE(offer.device.isEmpty()) << qPrintable(offer.device);
    EXPECT_EQ(offer.unavailable, QStringLiteral("Old GPU: it lacks 128 threads per workgroup (256 needed)"));
}

TEST(GpuMemoryBudgets, TheGpuTheBackendRunsOnIsOfferedAndNoGpuOffersNothing) {
    std::vector<gpu::DeviceInfo> devices = {device("Old GPU", "integrated", {{2 * kGiB, 0, true}}),
                                            device("New GPU", "discrete", {{16 * kGiB, 0, true}})};
    devices[0].shortfalls = {"no compute queue"};
    devices[1].index = 1;
    const VulkanOffer offer = vulkan_offer(gpu_memory_budgets(devices, 1));
    EXPECT_EQ(offer.device, QStringLiteral("New GPU"));
    EXPECT_TRUE(offer.unavailable.isEmpty());
    const VulkanOffer none = vulkan_offer({});
    EXPECT_TRUE(none.device.isEmpty());
    EXPECT_TRUE(none.unavailable.isEmpty());
}

TEST(GpuMemoryProbe, ReportsWhatADirectListingFinds) {
    GpuMemoryProbe probe;
    bool reported = false;
    QVector<GpuMemory> gpus;
    QObject::connect(&probe, &GpuMemoryProbe::detected, [&](const QVector<GpuMemory>& found) {
        gpus = found;
        reported = true;
    });
    probe.start();
    ASSERT_TRUE(wait_until([&] { return reported; }, 60000));
    const std::vector<gpu::DeviceInfo> devices = gpu::list_vulkan_devices();
    int chosen = -1;
    try {
        chosen = gpu::choose_vulkan_device(devices).index;
    } catch (const Error&) {
        // none usable: listed in the driver's order
    }
    const QVector<GpuMemory> direct = gpu_memory_budgets(devices, chosen);
    ASSERT_EQ(gpus.size(), direct.size());
    for (qsizetype i = 0; i < gpus.size(); ++i) {
        std::printf("detected %s: %.2f GiB budget\n", qPrintable(gpus[i].device), gpus[i].budget_bytes / double(kGiB));
        EXPECT_EQ(gpus[i].device, direct[i].device);
        // A budget is what the process may use now; allow other processes' allocations to move it.
        EXPECT_NEAR(static_cast<double>(gpus[i].budget_bytes), static_cast<double>(direct[i].budget_bytes),
                    0.05 * kGiB);
    }
}

TEST(MemoryPlannerPanel, ADetectedBudgetIsADeviceSize) {
    MemoryPlannerPanel panel;
    const int before = panel.memory_combo()->count();
    panel.add_detected_memory(QStringLiteral("Test GPU"), 11.5);
    panel.add_detected_memory(QStringLiteral("Test GPU"), 11.5);  // once per device
    panel.add_detected_memory(QStringLiteral("Empty"), 0);        // nothing to offer
    ASSERT_EQ(panel.memory_combo()->count(), before + 1);
    const int index = panel.memory_combo()->count() - 2;  // before "Custom"
    EXPECT_TRUE(panel.memory_combo()->itemText(index).contains(QLatin1String("Test GPU")));
    panel.memory_combo()->setCurrentIndex(index);
    const BudgetQuery q = panel.query();
    EXPECT_EQ(q.memory_gib, 11.5);
    EXPECT_EQ(panel.plot_data().series.back().points.front(),
              QPointF(11.5, static_cast<double>(plan_memory_budget(panel.chosen_model(), q).tokens_per_user)));
}

}  // namespace
}  // namespace inferscope::ui
