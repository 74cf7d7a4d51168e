// An LD_PRELOAD library that makes the Vulkan driver give its GPU up, for the fault tests:
//   INFERSCOPE_FAULT_VK_LOST_AFTER_WAITS=N  the first N fence waits report what the driver says;
//                                           every later one waits as well, then reports
//                                           VK_ERROR_DEVICE_LOST, as a driver does once it has
//                                           given up the device
// At exit it prints "fault_vulkan: W fence waits" to stderr, so a test can place the loss
// within a run it has counted.
#include <dlfcn.h>
#include <vulkan/vulkan.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

std::atomic<long long> fence_waits{0};

long long waits_before_loss() {
    const char* value = std::getenv("INFERSCOPE_FAULT_VK_LOST_AFTER_WAITS");
    return value == nullptr ? -1 : std::atoll(value);
}

struct WaitCountAtExit {
    ~WaitCountAtExit() { std::fprintf(stderr, "fault_vulkan: %lld fence waits\n", fence_waits.load()); }
} wait_count_at_exit;

}  // namespace

extern "C" VKAPI_ATTR VkResult VKAPI_CALL vkWaitForFences(VkDevice device, uint32_t fence_count, const VkFence* fences,
                                                          VkBool32 wait_all, uint64_t timeout_ns) {
    static const auto real = reinterpret_cast<PFN_vkWaitForFences>(::dlsym(RTLD_NEXT, "vkWaitForFences"));
    // The wait itself goes through, so nothing the GPU still runs is freed after a "loss".
    const VkResult result = real(device, fence_count, fences, wait_all, timeout_ns);
    const long long wait = ++fence_waits;
    const long long budget = waits_before_loss();
    return budget >= 0 && wait > budget ? VK_ERROR_DEVICE_LOST : result;
}
