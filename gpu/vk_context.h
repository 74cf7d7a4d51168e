#pragma once
// A Vulkan instance and logical device with one compute queue, the validation layer (with a
// messenger that counts errors) when asked for and installed, and device memory buffers.
#include <vulkan/vulkan.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gpu/vulkan_devices.h"

namespace inferscope::gpu {

class VkContext;

// A VkBuffer with its own memory: device-local, or host-visible and persistently mapped.
class Buffer {
public:
    enum class Kind { Device, Host };
    Buffer() = default;
    Buffer(const VkContext& ctx, uint64_t size_bytes, Kind kind);
    ~Buffer() { release(); }
    Buffer(Buffer&& other) noexcept { *this = std::move(other); }
    Buffer& operator=(Buffer&& other) noexcept;
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;

    // A buffer bound to memory it does not own (a BufferArena's block); `mapped` is its
    // host address when that memory is mapped, else null.
    static Buffer placed(VkDevice device, VkBuffer buffer, uint64_t size_bytes, void* mapped);

    VkBuffer handle() const { return buffer_; }
    uint64_t size_bytes() const { return size_; }
    // Null for device memory the host cannot see.
    void* mapped() const { return mapped_; }

private:
    void release();
    VkDevice device_ = VK_NULL_HANDLE;
    VkBuffer buffer_ = VK_NULL_HANDLE;
    VkDeviceMemory memory_ = VK_NULL_HANDLE;
    uint64_t size_ = 0;
    void* mapped_ = nullptr;
};

struct ContextOptions {
    // Enables VK_LAYER_KHRONOS_validation when installed; its errors are counted.
    bool validation = false;
    // > 0: launch at most this many workgroups along X even where the device allows more, so
    // tests on any device exercise the folding of larger launches into Y (laptop GPUs allow 65,535).
    uint32_t max_workgroups_x = 0;
    // > 0: bind at most this many storage buffers per shader, so tests on any device take the
    // paths of devices that allow fewer.
    uint32_t max_storage_buffers_per_shader = 0;
    // > 0: give a workgroup at most this much shared memory, so tests on any device meet the
    // limits of devices that have less.
    uint32_t max_shared_memory_bytes = 0;
    // Treat the device as lacking subgroup arithmetic, so that tests on any device run the
    // shared-memory builds (matmul_shared, matvec_shared, attention_split_shared).
    bool without_subgroup_arithmetic = false;
    // Uploads and downloads through device memory the host cannot see go through one reused
    // host-visible buffer of at most this many bytes, in chunks: a large tensor never needs a
    // staging allocation of its own size.
    uint64_t staging_bytes = 32ull << 20;
    // How long a submission may run before the wait for it gives up with an error (set_submission_timeout).
    std::chrono::nanoseconds submission_timeout = std::chrono::minutes(5);
};

class VkContext {
public:
    explicit VkContext(const ContextOptions& options = {});
    ~VkContext();
    VkContext(const VkContext&) = delete;
    VkContext& operator=(const VkContext&) = delete;

    VkDevice device() const { return device_; }
    VkPhysicalDevice physical_device() const { return physical_; }
    const DeviceInfo& info() const { return info_; }
    bool validation_enabled() const { return messenger_ != VK_NULL_HANDLE; }
    int validation_errors() const { return validation_errors_.load(); }
    double timestamp_period_ns() const { return timestamp_period_ns_; }
    uint32_t memory_type(uint32_t allowed_bits, Buffer::Kind kind) const;
    // On a device whose memory is the host's (integrated GPU, CPU driver): a device-local,
    // host-visible, coherent memory type among `allowed_bits`; -1 elsewhere or when none is.
    int unified_memory_type(uint32_t allowed_bits) const;

    // Records with `record` into a one-time command buffer, submits it and waits.
    void run_now(const std::function<void(VkCommandBuffer)>& record);
    // GPU microseconds per call of `reps` calls of `record` recorded back to back after one
    // untimed call (pipelines created, caches warm); needs timestamps (info().timestamps).
    double time_calls_us(const std::function<void(VkCommandBuffer)>& record, int reps);
    // Submits a recorded command buffer and waits for it to finish. A wait that fails (a GPU
    // that does not finish within the submission timeout, a lost device) throws at once and
    // leaves the submission pending: every later call that submits or transfers waits for it
    // first (finish_pending), so that nothing it still reads is overwritten or freed.
    void submit_and_wait(VkCommandBuffer cmd);
    // Waits for a submission whose wait failed earlier; throws as submit_and_wait does while it
    // has not finished. Callers about to write host-visible memory a pass reads call it first.
    void finish_pending();
    // Waits until the device is idle, whatever its state (before freeing what a pending
    // submission may use); on a GPU that hangs, until its driver gives it up as lost.
    void wait_idle() noexcept;
    void set_submission_timeout(std::chrono::nanoseconds timeout) { submission_timeout_ = timeout; }
    // For tests: the next `count` buffers are created and the one after them is refused, as by a
    // driver out of device memory (a CapacityError); later ones are created again.
    void refuse_buffer_after(int count) { buffers_before_refusal_ = count; }
    // Throws the refusal refuse_buffer_after asked for; Buffer calls it before it allocates.
    void count_buffer(uint64_t bytes) const;
    VkCommandBuffer allocate_command_buffer();
    void free_command_buffer(VkCommandBuffer cmd);

    // Copies host bytes into a buffer: directly when the host sees its memory, else through the
    // staging buffer, chunk by chunk.
    void upload(const Buffer& dst, uint64_t dst_offset_bytes, const void* src, uint64_t bytes);
    void download(const Buffer& src, uint64_t src_offset_bytes, void* dst, uint64_t bytes);

private:
    Buffer& staging(uint64_t bytes);
    // Submits `cmd`; `one_time`: a run_now buffer, freed once it has finished.
    void submit(VkCommandBuffer cmd, bool one_time);
    void await_submission();
    void create_instance(bool validation);
    void create_device();
    void destroy();
    static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT types,
                                                     const VkDebugUtilsMessengerCallbackDataEXT* data, void* self);

    VkInstance instance_ = VK_NULL_HANDLE;
    VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t queue_family_ = 0;
    VkCommandPool command_pool_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkPhysicalDeviceMemoryProperties memory_{};
    DeviceInfo info_;
    uint64_t staging_limit_bytes_;
    std::unique_ptr<Buffer> staging_;  // grown up to staging_limit_bytes_ as transfers need
    double timestamp_period_ns_ = 0;
    std::chrono::nanoseconds submission_timeout_;
    bool pending_ = false;                               // the last submission is not yet seen finished
    VkCommandBuffer pending_one_time_ = VK_NULL_HANDLE;  // its run_now buffer, freed once it finishes
    std::atomic<int> validation_errors_{0};
    mutable std::atomic<int> buffers_before_refusal_{-1};  // none refused while negative
};

// Throws Error naming `what` and the VkResult unless it is VK_SUCCESS.
void vk_check(VkResult result, const char* what);

// A buffer the shaders bind as storage and copies read and write, with no memory bound yet.
VkBuffer create_storage_buffer(VkDevice device, uint64_t size_bytes);
// CapacityError naming both sizes when `bytes` exceed the device's largest allocation.
void check_allocation_fits(const DeviceInfo& info, uint64_t bytes);
// `bytes` of memory type `type`; CapacityError naming `what` and the size when the device or
// host is out of memory.
VkDeviceMemory allocate_memory(VkDevice device, uint64_t bytes, uint32_t type, const std::string& what);

}  // namespace inferscope::gpu
