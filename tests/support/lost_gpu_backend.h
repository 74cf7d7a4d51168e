#pragma once
// A backend whose GPU its driver gives up: the CPU backend under a GPU's name, throwing
// DeviceLostError (as the Vulkan backend does on VK_ERROR_DEVICE_LOST) from a chosen pass on,
// for testing what the app and the server do when a device is lost.
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "engine/backend/backend.h"
#include "engine/backend/default_backend.h"
#include "engine/core/error.h"

namespace inferscope::testing {

class GpuLostAtPass final : public Backend {
public:
    // Passes 1 .. lost_at - 1 run on the CPU; pass lost_at and every later one throw.
    GpuLostAtPass(std::shared_ptr<const Model> model, int lost_at)
        : cpu_(make_default_backend(std::move(model), 1)), lost_at_(lost_at) {}
    std::string name() const override { return "Vulkan (a GPU its driver gives up)"; }
    void allocate_kv(const KvCacheLayout& layout) override { cpu_->allocate_kv(layout); }
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override {
        if (++passes_ >= lost_at_) throw DeviceLostError("Vulkan: vkWaitForFences failed: device lost");
        cpu_->forward(tokens, cache, logits);
    }
    void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) override { cpu_->copy_kv_blocks(group, copies); }
    void set_activation_tap(ActivationTap* tap) override { cpu_->set_activation_tap(tap); }

private:
    std::unique_ptr<Backend> cpu_;
    int lost_at_;
    int passes_ = 0;
};

}  // namespace inferscope::testing
