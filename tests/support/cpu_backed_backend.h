#pragma once
// The CPU backend inside a test's own backend: each method goes to it unless the test's
// subclass overrides it (a name, a warm-up, a failure), so test backends compute real logits.
#include <memory>
#include <span>
#include <utility>

#include "engine/backend/backend.h"
#include "engine/backend/default_backend.h"

namespace inferscope::testing {

class CpuBackedBackend : public Backend {
public:
    explicit CpuBackedBackend(std::shared_ptr<const Model> model) : cpu_(make_default_backend(std::move(model), 1)) {}
    void allocate_kv(const KvCacheLayout& layout) override { cpu_->allocate_kv(layout); }
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override {
        cpu_->forward(tokens, cache, logits);
    }
    void copy_kv_blocks(KvGroup group, std::span<const BlockCopy> copies) override { cpu_->copy_kv_blocks(group, copies); }
    void set_activation_tap(ActivationTap* tap) override { cpu_->set_activation_tap(tap); }

private:
    std::unique_ptr<Backend> cpu_;
};

}  // namespace inferscope::testing
