#pragma once
// Runs single operations of the Vulkan backend on host data, one submission each, so tests
// can compare every kernel with the CPU backend's (no Vulkan types here).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/model.h"

namespace inferscope::gpu {

class OpHarness {
public:
    // Error when no usable Vulkan device exists; `validation` as in VulkanBackendOptions.
    explicit OpHarness(bool validation);
    ~OpHarness();

    std::string device_name() const;
    int validation_errors() const;

    // y[n x w.rows] = x[n x w.cols] * W^T, the weights uploaded in parts of at most
    // `max_part_bytes` (0: the device's limit), as the backend does for large tensors.
    std::vector<float> matmul(const WeightMatrix& w, const std::vector<float>& x, int64_t n, uint64_t max_part_bytes = 0);
    // Rows `tokens` of `table`, dequantized: [tokens x table.cols].
    std::vector<float> embed(const WeightMatrix& table, const std::vector<int32_t>& tokens, uint64_t max_part_bytes = 0);
    // Each row of x[n x weight.size()] RMS-normalised and scaled by `weight`.
    std::vector<float> rms_norm(const std::vector<float>& x, const std::vector<float>& weight, float eps);
    // RoPE of heads[positions x n_heads x c.head_dim] with the model's RoPE settings.
    std::vector<float> rope(const std::vector<float>& heads, const std::vector<int32_t>& positions, const ModelConfig& c,
                            int n_heads);
    std::vector<float> swiglu(const std::vector<float>& gate, const std::vector<float>& up);
    // y[i] + x[i % x.size()]
    std::vector<float> add(const std::vector<float>& y, const std::vector<float>& x);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace inferscope::gpu
