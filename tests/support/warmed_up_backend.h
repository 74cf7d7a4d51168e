#pragma once
// A backend that asks for a warm-up, as a device compiling its kernels does, for testing what
// sessions and benchmarks do with one.
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/cpu_backed_backend.h"

namespace inferscope::testing {

// The CPU backend with a warm-up (as a device compiling its kernels would ask), recording the
// batches it runs.
class WarmedUpCpuBackend final : public CpuBackedBackend {
public:
    WarmedUpCpuBackend(const std::shared_ptr<const Model>& m, std::vector<int> passes, std::vector<Batch>& batches)
        : CpuBackedBackend(m), passes_(std::move(passes)), batches_(batches) {}
    // Each prepare_passes call: its arguments, and how many passes had run by then.
    struct Prepared {
        int most_tokens, most_logit_rows;
        size_t passes_before;
    };
    std::vector<Prepared> prepared;
    std::string name() const override { return "cpu with a warm-up"; }
    void forward(std::span<const BatchToken> tokens, const KvCache& cache, float* logits) override {
        batches_.emplace_back(tokens.begin(), tokens.end());
        CpuBackedBackend::forward(tokens, cache, logits);
    }
    std::vector<int> warm_up_pass_tokens() const override { return passes_; }
    void prepare_passes(int most_tokens, int most_logit_rows) override {
        prepared.push_back({most_tokens, most_logit_rows, batches_.size()});
    }

private:
    std::vector<int> passes_;
    std::vector<Batch>& batches_;
};

// The CPU backend recording its batches, asking for the Vulkan backend's warm-up passes (a
// 16-token prompt, then a decode step) where `warms_up`, for none otherwise.
inline std::unique_ptr<WarmedUpCpuBackend> recording_cpu_backend(const std::shared_ptr<const Model>& m, bool warms_up,
                                                                 std::vector<Batch>& batches) {
    return std::make_unique<WarmedUpCpuBackend>(m, warms_up ? std::vector<int>{16, 1} : std::vector<int>{}, batches);
}

}  // namespace inferscope::testing
