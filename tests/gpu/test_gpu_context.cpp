// The Vulkan context's limits and labels: allocations past the device's limits fail with an
// error naming the sizes, before any memory is asked for; a CPU driver is never named a GPU.
#include <gtest/gtest.h>

#include "gpu/vk_context.h"
#include "gpu/vulkan_backend_factory.h"
#include "gpu_test_util.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

TEST(GpuContext, BufferLargerThanTheLargestAllocationIsACapacityError) {
    std::unique_ptr<gpu::VkContext> ctx;
    INFERSCOPE_MAKE_OR_SKIP_GPU(ctx, std::make_unique<gpu::VkContext>());
    const uint64_t largest = ctx->info().max_allocation_bytes;
    ASSERT_GT(largest, 0u) << "the device reports no maxMemoryAllocationSize";
    try {
        gpu::Buffer too_big(*ctx, largest + 1, gpu::Buffer::Kind::Device);
        FAIL() << "a buffer of " << largest + 1 << " bytes was created";
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find(std::to_string(largest + 1)), std::string::npos) << e.what();
    }
    gpu::Buffer fits(*ctx, 4096, gpu::Buffer::Kind::Device);  // the context is still usable
    EXPECT_EQ(fits.size_bytes(), 4096u);
}

TEST(GpuContext, TheBackendNamesACpuDriverAsOne) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model));
    const gpu::DeviceInfo chosen = gpu::choose_vulkan_device();
    EXPECT_NE(backend->name().find(chosen.name), std::string::npos) << backend->name();
    EXPECT_EQ(backend->name().find("CPU driver") != std::string::npos, chosen.type == "cpu") << backend->name();
}

TEST(GpuContext, DeviceLocalBudgetIsTheLargestDeviceLocalHeap) {
    gpu::DeviceInfo info;
    info.heaps = {{8ull << 30, 0, false}, {4ull << 30, 3ull << 30, true}, {2ull << 30, 0, true}};
    EXPECT_EQ(gpu::device_local_budget_bytes(info), 3ull << 30);
    info.heaps = {{8ull << 30, 0, false}};
    EXPECT_EQ(gpu::device_local_budget_bytes(info), 0u);
}

}  // namespace
}  // namespace inferscope
