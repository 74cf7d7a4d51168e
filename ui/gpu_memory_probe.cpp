#include "ui/gpu_memory_probe.h"

#include <QStringList>
#include <QThread>
#include <algorithm>
#include <exception>

namespace inferscope::ui {

QVector<GpuMemory> gpu_memory_budgets(const std::vector<gpu::DeviceInfo>& devices, int chosen_index) {
    QVector<GpuMemory> gpus;
    for (const gpu::DeviceInfo& d : devices) {
        // A CPU implementation (lavapipe, SwiftShader) reports system memory, not a GPU's.
        if (d.type == "cpu") continue;
        quint64 best = 0;
        for (const gpu::MemoryHeapInfo& heap : d.heaps) {
            if (!heap.device_local) continue;
            best = std::max<quint64>(best, heap.budget_bytes != 0 ? heap.budget_bytes : heap.size_bytes);
        }
        if (best == 0) continue;
        QStringList lacks;
        for (const std::string& s : d.shortfalls) lacks << QString::fromStdString(s);
        const GpuMemory gpu{QString::fromStdString(d.name), best, d.index == chosen_index, lacks.join(QStringLiteral(", "))};
        if (gpu.runs_vulkan) {
            gpus.push_front(gpu);
        } else {
            gpus.push_back(gpu);
        }
    }
    return gpus;
}

VulkanOffer vulkan_offer(const QVector<GpuMemory>& gpus) {
    if (gpus.isEmpty()) return {};
    const GpuMemory& first = gpus.front();
    if (first.runs_vulkan) return {first.device, {}};
    const QString why = first.lacks.isEmpty() ? QObject::tr("the Vulkan backend would not run on it")
                                              : QObject::tr("it lacks %1").arg(first.lacks);
    return {{}, QObject::tr("%1: %2").arg(first.device, why)};
}

GpuMemoryProbe::GpuMemoryProbe(QObject* parent) : QObject(parent) {}

GpuMemoryProbe::~GpuMemoryProbe() {
    if (thread_ != nullptr) thread_->wait();
}

void GpuMemoryProbe::start() {
    if (thread_ != nullptr) return;
    thread_ = QThread::create([this] {
        QVector<GpuMemory> gpus;
        try {
            const std::vector<gpu::DeviceInfo> devices = gpu::list_vulkan_devices();
            int chosen = -1;
            try {
                chosen = gpu::choose_vulkan_device(devices).index;
            } catch (const std::exception&) {
                // No usable device: the GPUs are still listed for the planner.
            }
            gpus = gpu_memory_budgets(devices, chosen);
        } catch (const std::exception&) {
            // A broken driver leaves the planner with its presets; nothing to report.
        }
        // Queued to this object: dropped if it is destroyed before the event is delivered.
        QMetaObject::invokeMethod(
            this, [this, gpus] { Q_EMIT detected(gpus); }, Qt::QueuedConnection);
    });
    thread_->setParent(this);
    thread_->start();
}

}  // namespace inferscope::ui
