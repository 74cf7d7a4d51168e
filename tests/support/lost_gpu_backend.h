#pragma once
// A backend whose GPU its driver gives up: the CPU backend under a GPU's name, throwing
// DeviceLostError (as the Vulkan backend does on VK_ERROR_DEVICE_LOST) from a chosen pass on,
// for testing what the app and the server do when a device is lost.
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "support/cpu_backed_backend.h"

namespace inferscope::testing {

class GpuLostAtPass final : public CpuBackedBackend {
public:
    // Passes 1 .. lost_at - 1 run on the CPU; pass lost_at and every later one throw. A warm-up
    // of `warm_up_passes` (as the Vulkan backend asks for) counts its passes among them.
    GpuLostAtPass(std::shared_ptr<const Model> model, int lost_at, std::vector<int> warm_up_passes = {})
        : CpuBackedBackend(std::move(model)), lost_at_(lost_at), warm_up_passes_(std::move(warm_up_passes)) {}
    std::string name() const override { return "Vulkan (a GPU its driver gives up)"; }
    std::vector<int> warm_up_pass_tokens() const override { return warm_up_passes_; }
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override {
        if (++passes_ >= lost_at_) throw DeviceLostError("Vulkan: vkWaitForFences failed: device lost");
        CpuBackedBackend::forward(tokens, cache, logits);
    }

private:
    int lost_at_;
    std::vector<int> warm_up_passes_;
    int passes_ = 0;
};

}  // namespace inferscope::testing
