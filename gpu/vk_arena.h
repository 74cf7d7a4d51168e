#pragma once
// Long-lived device buffers (the model's weights) placed in a few large allocations instead of
// one each: drivers cap how many allocations a device may hold (maxMemoryAllocationCount, 4,096
// on many) and each one costs a kernel call and its own alignment. On a device whose memory is
// the host's (an integrated GPU, a CPU driver) the blocks are device-local host-visible memory,
// mapped, so an upload into a placed buffer is a memcpy with no staging copy.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <vector>

#include "gpu/vk_context.h"

namespace inferscope::gpu {

class BufferArena {
public:
    static constexpr uint64_t kDefaultBlockBytes = 256ull << 20;

    // Blocks of `block_bytes` (a buffer larger than that gets a block of its own size), never
    // past the device's largest allocation.
    explicit BufferArena(const VkContext& ctx, uint64_t block_bytes = kDefaultBlockBytes);
    // Frees the blocks: every buffer placed in them must already be destroyed.
    ~BufferArena();
    BufferArena(const BufferArena&) = delete;
    BufferArena& operator=(const BufferArena&) = delete;

    // A device buffer of `size_bytes` in the first block with room, or in a new one.
    // CapacityError naming the sizes when the device cannot hold it.
    Buffer place(uint64_t size_bytes);

    size_t allocations() const { return blocks_.size(); }
    uint64_t allocated_bytes() const;
    // Whether the blocks are mapped host memory the device reads directly.
    bool unified() const { return unified_type_ >= 0; }

private:
    struct Block {
        VkDeviceMemory memory = VK_NULL_HANDLE;
        uint64_t size_bytes = 0;
        uint64_t used_bytes = 0;
        void* mapped = nullptr;
    };
    Block& block_with_room(const VkMemoryRequirements& requirements);

    const VkContext& ctx_;
    uint64_t block_bytes_;
    int unified_type_ = -1;
    std::vector<Block> blocks_;
};

}  // namespace inferscope::gpu
