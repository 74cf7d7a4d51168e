#pragma once
// What the Vulkan backend reports about the devices it can use; no Vulkan types, so the
// CLI and tests can include it.
#include <cstdint>
#include <string>
#include <vector>

namespace inferscope::gpu {

struct MemoryHeapInfo {
    uint64_t size_bytes = 0;
    uint64_t budget_bytes = 0;  // VK_EXT_memory_budget's budget; 0 when the extension is absent
    bool device_local = false;
};

struct DeviceInfo {
    int index = 0;             // position in the driver's enumeration (INFERSCOPE_VK_DEVICE=<index>)
    std::string name;
    std::string type;          // "discrete", "integrated", "virtual", "cpu", "other"
    std::string driver;        // driver name and version string
    std::string api_version;   // "1.3.239"
    uint32_t vendor_id = 0;    // PCI vendor id (0x10DE NVIDIA, 0x1002 AMD, 0x8086 Intel, ...)
    // Streaming multiprocessors, compute units or shader cores, where a vendor extension
    // reports them (VK_NV_shader_sm_builtins, VK_AMD_shader_core_properties(2),
    // VK_ARM_shader_core_builtins), or a CPU driver's host threads; 0 elsewhere.
    uint32_t compute_units = 0;
    std::vector<MemoryHeapInfo> heaps;
    uint64_t max_storage_buffer_range_bytes = 0;  // the most one shader binding can see
    uint64_t max_allocation_bytes = 0;            // maxMemoryAllocationSize: the largest single allocation
    uint32_t subgroup_size = 0;
    uint32_t max_workgroup_count_x = 0;  // maxComputeWorkGroupCount[0] (65,535 on some laptop GPUs)
    // The fewer of maxComputeWorkGroupInvocations and maxComputeWorkGroupSize[0]: the most threads
    // of a one-dimensional workgroup (Vulkan guarantees 128).
    uint32_t max_workgroup_threads = 0;
    uint32_t max_shared_memory_bytes = 0;  // maxComputeSharedMemorySize: a workgroup's shared memory
    // The fewer of maxPerStageDescriptorStorageBuffers and maxDescriptorSetStorageBuffers: the
    // most storage buffers one compute shader binds.
    uint32_t max_storage_buffers_per_shader = 0;
    bool storage_16bit = false;       // required (with shaderInt16): weights and the F16 KV cache are 16-bit words
    bool float16_arithmetic = false;  // reported; the kernels compute in F32
    bool storage_8bit = false;        // reported
    bool int8_arithmetic = false;     // reported
    bool integer_dot_product = false;  // VK_KHR_shader_integer_dot_product: mat-vecs on encoded inputs (gpu/README.md)
    bool subgroup_arithmetic = false; // the matrix products reduce with subgroupAdd (shared memory without)
    bool timestamps = false;          // compute-queue timestamps: per-op GPU time
    bool compute_queue = false;       // required
    bool vulkan_1_2 = false;          // API version 1.2 or later: required
    // What the backend requires and the device lacks (device_shortfalls), each naming what the
    // device has; empty for a usable device.
    std::vector<std::string> shortfalls;
    bool usable() const { return shortfalls.empty(); }
};

// What the backend requires of every device (whatever the model) that `info` lacks, one
// phrase each naming the device's value and the requirement: Vulkan 1.2, a compute queue,
// 16-bit storage buffers with shaderInt16, 10 storage buffers per shader, workgroups of 256
// threads and the kernels' fixed shared memory.
std::vector<std::string> device_shortfalls(const DeviceInfo& info);

// The largest device-local heap's budget (its size where the driver reports no budget).
uint64_t device_local_budget_bytes(const DeviceInfo& info);

// `bytes` in MiB, rounded up (so that a size past a budget never prints equal to it), e.g. "1025 MiB".
std::string mib_text(uint64_t bytes);

// CapacityError, naming the sizes and what to lower, where a KV cache of `kv_bytes` (for
// `kv_tokens` positions) does not fit the device-local budget beside `weight_bytes` of weights.
void check_kv_cache_fits(const DeviceInfo& info, uint64_t weight_bytes, uint64_t kv_bytes, int64_t kv_tokens);

// Every Vulkan device of the system; empty when there is no Vulkan loader or driver.
std::vector<DeviceInfo> list_vulkan_devices();

// The device the backend would use: INFERSCOPE_VK_DEVICE (an index or part of a name, case
// insensitive) when set, else the first usable of discrete > integrated > virtual > CPU.
// Error naming the reason when none fits.
DeviceInfo choose_vulkan_device();
// The same choice among devices already listed.
DeviceInfo choose_vulkan_device(const std::vector<DeviceInfo>& devices);

}  // namespace inferscope::gpu
