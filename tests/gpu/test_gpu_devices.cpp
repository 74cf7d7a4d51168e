// Which devices the backend takes (gpu/vulkan_devices.h): a device lacking a requirement is
// refused with an error that names what it lacks and what it has (no device needed), and a
// model whose attention needs more shared memory than the device gives is refused at load.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "engine/core/error.h"
#include "gpu/vk_kernels.h"
#include "gpu/vulkan_backend_factory.h"
#include "gpu/vulkan_devices.h"
#include "gpu_test_util.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

// A device that meets every requirement exactly.
gpu::DeviceInfo capable_device(const std::string& name) {
    gpu::DeviceInfo info;
    info.name = name;
    info.type = "discrete";
    info.api_version = "1.2.0";
    info.vulkan_1_2 = true;
    info.compute_queue = true;
    info.storage_16bit = true;
    info.max_storage_buffers_per_shader = gpu::kRequiredStorageBuffersPerShader;
    info.max_workgroup_threads = gpu::kRequiredWorkgroupThreads;
    info.max_shared_memory_bytes = gpu::kRequiredSharedMemoryBytes;
    info.shortfalls = gpu::device_shortfalls(info);
    return info;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(GpuDevices, ADeviceMeetingEveryRequirementHasNoShortfall) {
    EXPECT_TRUE(capable_device("card").usable());
    EXPECT_TRUE(capable_device("card").shortfalls.empty());
}

TEST(GpuDevices, EachShortfallNamesWhatTheDeviceHasAndWhatIsNeeded) {
    gpu::DeviceInfo old = capable_device("old");
    old.vulkan_1_2 = false;
    old.api_version = "1.1.126";
    old.max_workgroup_threads = 128;  // the least Vulkan guarantees
    old.max_shared_memory_bytes = 16384;
    const std::vector<std::string> lacks = gpu::device_shortfalls(old);
    ASSERT_EQ(lacks.size(), 3u);
    EXPECT_EQ(lacks[0], "Vulkan 1.1.126 (1.2 needed)");
    EXPECT_EQ(lacks[1], "128 threads per workgroup (256 needed)");
    EXPECT_EQ(lacks[2],
              "16384 bytes of shared memory per workgroup (" + std::to_string(gpu::kRequiredSharedMemoryBytes) + " needed)");

    gpu::DeviceInfo bare = capable_device("bare");
    bare.compute_queue = false;
    bare.storage_16bit = false;
    bare.max_storage_buffers_per_shader = 8;
    const std::vector<std::string> bare_lacks = gpu::device_shortfalls(bare);
    ASSERT_EQ(bare_lacks.size(), 3u);
    EXPECT_EQ(bare_lacks[0], "no compute queue");
    EXPECT_EQ(bare_lacks[1], "no 16-bit storage buffers with shaderInt16");
    EXPECT_EQ(bare_lacks[2], "8 storage buffers per shader (10 needed)");
}

// Clears INFERSCOPE_VK_DEVICE for the test and restores the process's value after it.
class DeviceChoiceTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (const char* v = std::getenv("INFERSCOPE_VK_DEVICE")) saved_ = v;
        unsetenv("INFERSCOPE_VK_DEVICE");
    }
    void TearDown() override {
        if (saved_.has_value()) {
            setenv("INFERSCOPE_VK_DEVICE", saved_->c_str(), 1);
        } else {
            unsetenv("INFERSCOPE_VK_DEVICE");
        }
    }

private:
    std::optional<std::string> saved_;
};

TEST_F(DeviceChoiceTest, AnUnusableDeviceIsPassedOverAndNamedWhenNoneIsUsable) {
    gpu::DeviceInfo small = capable_device("Small GPU");
    small.index = 0;
    small.max_workgroup_threads = 128;
    small.shortfalls = gpu::device_shortfalls(small);
    gpu::DeviceInfo cpu = capable_device("Software rasterizer");
    cpu.index = 1;
    cpu.type = "cpu";
    cpu.shortfalls = gpu::device_shortfalls(cpu);
    EXPECT_EQ(gpu::choose_vulkan_device({small, cpu}).index, 1) << "the usable CPU driver, not the unusable GPU";

    cpu.storage_16bit = false;
    cpu.shortfalls = gpu::device_shortfalls(cpu);
    try {
        gpu::choose_vulkan_device({small, cpu});
        FAIL() << "a device was chosen where none is usable";
    } catch (const UnsupportedError& e) {
        const std::string what = e.what();
        EXPECT_TRUE(contains(what, "'Small GPU': 128 threads per workgroup (256 needed)")) << what;
        EXPECT_TRUE(contains(what, "'Software rasterizer': no 16-bit storage buffers")) << what;
    }
}

TEST_F(DeviceChoiceTest, AnUnusableDeviceAskedForByNameIsRefusedNamingWhatItLacks) {
    gpu::DeviceInfo small = capable_device("Small GPU");
    small.max_shared_memory_bytes = 16384;
    small.shortfalls = gpu::device_shortfalls(small);
    setenv("INFERSCOPE_VK_DEVICE", "small", 1);
    try {
        gpu::choose_vulkan_device({small, capable_device("Big GPU")});
        FAIL() << "the unusable device asked for was chosen";
    } catch (const UnsupportedError& e) {
        EXPECT_TRUE(contains(e.what(), "'Small GPU' (INFERSCOPE_VK_DEVICE=small)")) << e.what();
        EXPECT_TRUE(contains(e.what(), "16384 bytes of shared memory per workgroup")) << e.what();
    }
}

// 16 query heads of 256 dimensions per KV head need about 29 KB of attention_split.comp's
// shared memory per workgroup: the model loads on a device that gives that, and is refused at
// load, naming the sizes, on one at the requirement (16,388 bytes).
TEST(GpuDevices, AModelWhoseAttentionDoesNotFitTheDevicesSharedMemoryIsRefusedAtLoad) {
    auto spec = testing::tiny_spec("qwen3");
    spec.n_head = 16;
    spec.n_head_kv = 1;
    spec.head_dim = 256;
    const auto model = testing::tiny_model(spec);
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model));
    ASSERT_NE(backend, nullptr);
    backend.reset();
    gpu::VulkanBackendOptions options;
    options.max_shared_memory_bytes = gpu::kRequiredSharedMemoryBytes;
    try {
        backend = gpu::make_vulkan_backend(model, options);
        FAIL() << "a model whose attention needs more shared memory than the device gives was loaded";
    } catch (const CapacityError& e) {
        EXPECT_TRUE(contains(e.what(), "16 query heads of 256 dimensions")) << e.what();
        EXPECT_TRUE(contains(e.what(), "gives a workgroup " + std::to_string(gpu::kRequiredSharedMemoryBytes))) << e.what();
    }
}

}  // namespace
}  // namespace inferscope
