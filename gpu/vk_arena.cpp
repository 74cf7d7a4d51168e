#include "gpu/vk_arena.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace inferscope::gpu {
namespace {

uint64_t align_up(uint64_t value, uint64_t alignment) { return (value + alignment - 1) / alignment * alignment; }

}  // namespace

BufferArena::BufferArena(const VkContext& ctx, uint64_t block_bytes) : ctx_(ctx), block_bytes_(block_bytes) {
    const uint64_t largest = ctx.info().max_allocation_bytes;
    if (largest > 0) block_bytes_ = std::min(block_bytes_, largest);
}

BufferArena::~BufferArena() {
    for (const Block& b : blocks_) vkFreeMemory(ctx_.device(), b.memory, nullptr);
}

uint64_t BufferArena::allocated_bytes() const {
    uint64_t total = 0;
    for (const Block& b : blocks_) total += b.size_bytes;
    return total;
}

BufferArena::Block& BufferArena::block_with_room(const VkMemoryRequirements& requirements) {
    for (Block& b : blocks_) {
        if (align_up(b.used_bytes, requirements.alignment) + requirements.size <= b.size_bytes) return b;
    }
    check_allocation_fits(ctx_.info(), requirements.size);
    Block b;
    b.size_bytes = std::max(block_bytes_, requirements.size);
    const uint32_t type =
        unified() ? static_cast<uint32_t>(unified_type_) : ctx_.memory_type(requirements.memoryTypeBits, Buffer::Kind::Device);
    b.memory = allocate_memory(ctx_.device(), b.size_bytes, type,
                               "device memory for the weights (" + std::to_string(allocated_bytes()) + " bytes already held)");
    if (unified()) {
        const VkResult mapped = vkMapMemory(ctx_.device(), b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
        if (mapped != VK_SUCCESS) {
            vkFreeMemory(ctx_.device(), b.memory, nullptr);
            vk_check(mapped, "vkMapMemory");
        }
    }
    blocks_.push_back(b);
    return blocks_.back();
}

Buffer BufferArena::place(uint64_t size_bytes) {
    VkBuffer buffer = create_storage_buffer(ctx_.device(), size_bytes);
    try {
        VkMemoryRequirements requirements{};
        vkGetBufferMemoryRequirements(ctx_.device(), buffer, &requirements);
        // The memory type is chosen once, by the first buffer: every storage buffer of the
        // same usage accepts the same types.
        if (blocks_.empty()) unified_type_ = ctx_.unified_memory_type(requirements.memoryTypeBits);
        Block& b = block_with_room(requirements);
        const uint64_t offset = align_up(b.used_bytes, requirements.alignment);
        vk_check(vkBindBufferMemory(ctx_.device(), buffer, b.memory, offset), "vkBindBufferMemory");
        b.used_bytes = offset + requirements.size;
        void* mapped = b.mapped != nullptr ? static_cast<char*>(b.mapped) + offset : nullptr;
        return Buffer::placed(ctx_.device(), buffer, size_bytes, mapped);
    } catch (...) {
        vkDestroyBuffer(ctx_.device(), buffer, nullptr);
        throw;
    }
}

}  // namespace inferscope::gpu
