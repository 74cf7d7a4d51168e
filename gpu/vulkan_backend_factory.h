#pragma once
// The Vulkan backend as the app sees it: no Vulkan types, so app/ and tests can create it
// without including Vulkan headers.
#include <memory>
#include <optional>
#include <string>

#include "engine/backend/backend.h"

namespace inferscope {
class Model;
}

namespace inferscope::gpu {

struct VulkanBackendOptions {
    // Enables the Khronos validation layer when installed (tests); errors are counted.
    bool validation = false;
    // Most tokens per pass (0: as many as the device's storage bindings allow, at most 512);
    // tests lower it to exercise batches split into several passes.
    int max_pass_tokens = 0;
    // A timestamp after every operation (per-op GPU time in step events). They cost a
    // decode step a noticeable part of its speed; bench turns them off.
    bool op_timestamps = true;
    // Replays a pass recorded earlier for the same shape (tokens, logit rows) while its
    // buffers live; false records every pass anew (tests compare the two).
    bool replay = true;
    // Whether InferenceSession::warm_up also creates, without running them, the kernels of the
    // passes its own passes did not run (Backend::prepare_passes): prompts of 2 to 15 tokens and
    // passes wanting several rows of logits, each token or row count with kernels of its own. By
    // default on a GPU, whose driver compiles a kernel as it creates it; not on a CPU driver
    // (lavapipe), where that adds seconds to a load for kernels a session may never run (tests
    // set it).
    std::optional<bool> kernels_ahead;
    // An entry of the kernel tuning table (gpu/vk_tuning.h) instead of the device's, as
    // INFERSCOPE_VK_TUNING sets it; empty: the device's (or the variable's).
    std::string kernel_tuning;
    // Quantized weights' inputs encoded as the CPU encodes them and integer dot products (where the device has them) or
    // F32 inputs, instead of the tuning's choice, as INFERSCOPE_VK_INTEGER_DOT sets it. F16 and BF16 weights' inputs are
    // rounded as the CPU rounds them either way.
    std::optional<bool> integer_dot;
    // > 0: ContextOptions::max_storage_buffers_per_shader (tests).
    uint32_t max_storage_buffers_per_shader = 0;
    // > 0: ContextOptions::max_shared_memory_bytes (tests).
    uint32_t max_shared_memory_bytes = 0;
    // ContextOptions::without_subgroup_arithmetic (tests).
    bool without_subgroup_arithmetic = false;
};

// A backend running the whole forward pass on the device choose_vulkan_device() picks.
// Error/UnsupportedError naming the reason when no usable Vulkan device exists; CapacityError
// when the model's attention needs more shared memory per workgroup than the device has.
std::unique_ptr<Backend> make_vulkan_backend(std::shared_ptr<const Model> model, const VulkanBackendOptions& options = {});

// Validation errors reported so far by a backend made by make_vulkan_backend (0 without the
// layer); -1 when `backend` is not a Vulkan backend.
int vulkan_validation_errors(const Backend& backend);

// Whether a backend made by make_vulkan_backend multiplies quantized weights by their input
// encoded as the CPU backend (and llama.cpp's) encodes it, Q8_0, Q8_1 or Q8_K, so that
// its logits match the CPU's own: where it uses integer dot products. Otherwise by the F32
// input, matching the CPU on those weights dequantized to F32. (F16 and BF16 weights meet their
// input rounded as the CPU rounds it in both.) Error when `backend` is not a Vulkan backend.
bool vulkan_encodes_quantized_inputs(const Backend& backend);

// Where a backend made by make_vulkan_backend keeps the model's weights.
struct VulkanWeightMemory {
    size_t allocations = 0;  // device memory allocations the weights are placed in
    uint64_t bytes = 0;      // their total size
    bool unified = false;    // host-visible device memory the uploads wrote directly
};
// Error when `backend` is not a Vulkan backend.
VulkanWeightMemory vulkan_weight_memory(const Backend& backend);

// The read bandwidth of a Vulkan backend's device in bytes/s, measured by a shader reading a
// buffer of up to 1 GiB; 0 when the device cannot time it (no timestamps). Error when
// `backend` is not a Vulkan backend.
double vulkan_read_bandwidth(Backend& backend);

}  // namespace inferscope::gpu
