#include "gpu/vk_bandwidth.h"

#include <algorithm>

namespace inferscope::gpu {

ReadBandwidth measure_read_bandwidth(VkContext& ctx, Kernels& kernels, uint64_t bytes, int reps) {
    const DeviceInfo& info = ctx.info();
    if (!info.timestamps) return {};
    uint64_t size = std::min(bytes, info.max_storage_buffer_range_bytes);
    if (const uint64_t budget = device_local_budget_bytes(info); budget > 0) size = std::min(size, budget / 4);
    if (info.max_allocation_bytes > 0) size = std::min(size, info.max_allocation_bytes);
    size = size / 16 * 16;
    if (size == 0) return {};
    ReadBandwidth result;
    result.buffer_bytes = size;
    {
        const Buffer source(ctx, size, Buffer::Kind::Device);
        const Buffer sink(ctx, 16, Buffer::Kind::Device);
        const auto count = static_cast<uint32_t>(size / 16);
        // Enough workgroups to keep every unit's loads in flight: about 8 loads per thread.
        const auto workgroups = static_cast<uint32_t>(
            std::clamp<uint64_t>((count + 256 * 8 - 1) / (256 * 8), 1, std::min<uint64_t>(info.max_workgroup_count_x, 65535)));
        ctx.run_now([&](VkCommandBuffer cmd) { vkCmdFillBuffer(cmd, source.handle(), 0, VK_WHOLE_SIZE, 0); });
        const double us = ctx.time_calls_us(
            [&](VkCommandBuffer cmd) {
                kernels.dispatch(cmd, Shader::ReadBandwidth, {}, {source.handle(), sink.handle()}, &count, sizeof count,
                                 workgroups);
            },
            reps);
        if (us > 0) result.bytes_per_second = static_cast<double>(size) / (us * 1e-6);
    }
    kernels.forget_descriptor_sets();  // the buffers above are gone
    return result;
}

}  // namespace inferscope::gpu
