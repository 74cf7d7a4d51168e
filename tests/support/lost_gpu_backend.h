#pragma once
// A backend whose GPU its driver gives up: the CPU backend under a GPU's name, throwing
// DeviceLostError (as the Vulkan backend does on VK_ERROR_DEVICE_LOST) from a chosen pass on,
// for testing what the app and the server do when a device is lost.
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "engine/core/error.h"
#include "support/cpu_backed_backend.h"

namespace inferscope::testing {

class GpuLostAtPass final : public CpuBackedBackend {
public:
    // Passes 1 .. lost_at - 1 run on the CPU; pass lost_at and every later one throw.
    GpuLostAtPass(std::shared_ptr<const Model> model, int lost_at) : CpuBackedBackend(std::move(model)), lost_at_(lost_at) {}
    std::string name() const override { return "Vulkan (a GPU its driver gives up)"; }
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override {
        if (++passes_ >= lost_at_) throw DeviceLostError("Vulkan: vkWaitForFences failed: device lost");
        CpuBackedBackend::forward(tokens, cache, logits);
    }

private:
    int lost_at_;
    int passes_ = 0;
};

}  // namespace inferscope::testing
