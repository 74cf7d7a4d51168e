#pragma once
// The device's memory read bandwidth, measured: the floor `bench --backend vulkan` compares
// decode with (tokens/s <= bandwidth / bytes read per token), as host RAM's is for the CPU.
#include <cstdint>

#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"

namespace inferscope::gpu {

struct ReadBandwidth {
    double bytes_per_second = 0;  // 0 when the device has no timestamps to time it with
    uint64_t buffer_bytes = 0;    // what each timed read covered
};

// Reads a zero-filled buffer of about `bytes` (at most one storage binding and a quarter of
// the device-local budget) `reps` times after one untimed read, timed by GPU timestamps.
// Frees the buffer and forgets the kernels' descriptor sets before returning.
ReadBandwidth measure_read_bandwidth(VkContext& ctx, Kernels& kernels, uint64_t bytes = 1ull << 30, int reps = 10);

}  // namespace inferscope::gpu
