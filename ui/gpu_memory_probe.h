#pragma once
// The memory budget of each GPU on the system, for the memory planner: the largest
// device-local heap of every Vulkan device that is not a CPU implementation, at
// VK_EXT_memory_budget's budget (what this process may use now) or, without that extension,
// the heap's size. Listing devices creates a Vulkan instance, which can take a noticeable
// fraction of a second, so it runs on a thread of its own.
#include <QObject>
#include <QString>
#include <QVector>
#include <vector>

#include "gpu/vulkan_devices.h"

class QThread;

namespace inferscope::ui {

struct GpuMemory {
    QString device;
    quint64 budget_bytes = 0;
    bool runs_vulkan = false;  // the device the Vulkan backend would choose
    QString lacks;             // what keeps it from running the backend (device_shortfalls); empty if nothing
};

// The GPUs among `devices` and their budgets: the one the Vulkan backend would choose
// (device index `chosen_index`, -1: none) first, so that the GPU the app names is the one it
// runs on; then the others in the driver's order.
QVector<GpuMemory> gpu_memory_budgets(const std::vector<gpu::DeviceInfo>& devices, int chosen_index = -1);

// What the backend menu offers for Vulkan: the GPU the backend would run on; or, where it
// would run on none of the detected GPUs (each lacks a requirement, and a CPU driver or nothing
// would be chosen instead), no device and why, naming the first GPU and what it lacks; or
// nothing at all without a GPU.
struct VulkanOffer {
    QString device;
    QString unavailable;
};
VulkanOffer vulkan_offer(const QVector<GpuMemory>& gpus);

class GpuMemoryProbe : public QObject {
    Q_OBJECT
public:
    explicit GpuMemoryProbe(QObject* parent = nullptr);
    // Waits for a running probe: the thread must not outlive the object it reports to.
    ~GpuMemoryProbe() override;

    // Lists the devices once, in the background; detected() follows on this object's thread.
    void start();

Q_SIGNALS:
    void detected(const QVector<inferscope::ui::GpuMemory>& gpus);

private:
    QThread* thread_ = nullptr;
};

}  // namespace inferscope::ui
