#include "gpu/vk_context.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "engine/core/error.h"
#include "gpu/vk_kernels.h"

namespace inferscope::gpu {

namespace {
const char* result_name(VkResult result) {
    switch (result) {
        case VK_ERROR_OUT_OF_HOST_MEMORY: return "out of host memory";
        case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "out of device memory";
        case VK_ERROR_INITIALIZATION_FAILED: return "initialization failed";
        case VK_ERROR_DEVICE_LOST:
            return "device lost (its driver gave the GPU up after a fault or a hang; the Vulkan backend runs again once the "
                   "model is loaded anew, the CPU backend at once)";
        case VK_ERROR_LAYER_NOT_PRESENT: return "layer not present";
        case VK_ERROR_EXTENSION_NOT_PRESENT: return "extension not present";
        case VK_ERROR_FEATURE_NOT_PRESENT: return "feature not present";
        case VK_ERROR_INCOMPATIBLE_DRIVER: return "no compatible Vulkan driver";
        default: return "error";
    }
}
}  // namespace

void vk_check(VkResult result, const char* what) {
    if (result == VK_SUCCESS) return;
    const std::string message =
        std::string("Vulkan: ") + what + " failed: " + result_name(result) + " (VkResult " + std::to_string(result) + ")";
    if (result == VK_ERROR_DEVICE_LOST) throw DeviceLostError(message);
    throw Error(message);
}

namespace {

const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";
#ifndef INFERSCOPE_VK_SYNC_VALIDATION
#define INFERSCOPE_VK_SYNC_VALIDATION 1
#endif
// With the layer: synchronization validation too (a missing barrier between dispatches is an
// error); off in sanitizer builds (gpu/CMakeLists.txt says why).
constexpr bool kSyncValidation = INFERSCOPE_VK_SYNC_VALIDATION != 0;
// VK_KHR_portability_subset: a provisional extension, named here so that no beta header is needed.
const char* kPortabilitySubset = "VK_KHR_portability_subset";

bool has_layer(const char* name) {
    uint32_t count = 0;
    vkEnumerateInstanceLayerProperties(&count, nullptr);
    std::vector<VkLayerProperties> layers(count);
    vkEnumerateInstanceLayerProperties(&count, layers.data());
    return std::any_of(layers.begin(), layers.end(), [&](const VkLayerProperties& l) { return std::strcmp(l.layerName, name) == 0; });
}

bool has_device_extension(VkPhysicalDevice device, const char* name) {
    uint32_t count = 0;
    vkEnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data());
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

const char* type_name(VkPhysicalDeviceType type) {
    switch (type) {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete";
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated";
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual";
        case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
        default: return "other";
    }
}

// Lower is preferred: discrete > integrated > virtual > CPU > other.
int type_rank(const std::string& type) {
    static const char* kOrder[] = {"discrete", "integrated", "virtual", "cpu"};
    for (int i = 0; i < 4; ++i) {
        if (type == kOrder[i]) return i;
    }
    return 4;
}

std::string version_string(uint32_t v) {
    return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
           std::to_string(VK_API_VERSION_PATCH(v));
}

int compute_queue_family(VkPhysicalDevice device) {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
    std::vector<VkQueueFamilyProperties> families(count);
    vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
    for (uint32_t i = 0; i < count; ++i) {
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) return static_cast<int>(i);
    }
    return -1;
}

void read_heaps(VkPhysicalDevice device, DeviceInfo& info) {
    VkPhysicalDeviceMemoryBudgetPropertiesEXT budget{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
    VkPhysicalDeviceMemoryProperties2 memory{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
    const bool with_budget = has_device_extension(device, VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
    if (with_budget) memory.pNext = &budget;
    vkGetPhysicalDeviceMemoryProperties2(device, &memory);
    for (uint32_t h = 0; h < memory.memoryProperties.memoryHeapCount; ++h) {
        const VkMemoryHeap& heap = memory.memoryProperties.memoryHeaps[h];
        info.heaps.push_back({heap.size, with_budget ? budget.heapBudget[h] : 0,
                              (heap.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) != 0});
    }
}

uint32_t read_compute_units(VkPhysicalDevice device) {
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    if (has_device_extension(device, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV};
        properties.pNext = &sm;
        vkGetPhysicalDeviceProperties2(device, &properties);
        return sm.shaderSMCount;
    }
    if (has_device_extension(device, VK_AMD_SHADER_CORE_PROPERTIES_2_EXTENSION_NAME)) {
        // The active units: a part with some disabled has fewer than engines x arrays x units.
        VkPhysicalDeviceShaderCoreProperties2AMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_2_AMD};
        properties.pNext = &core;
        vkGetPhysicalDeviceProperties2(device, &properties);
        return core.activeComputeUnitCount;
    }
    if (has_device_extension(device, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderCorePropertiesAMD core{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD};
        properties.pNext = &core;
        vkGetPhysicalDeviceProperties2(device, &properties);
        return core.shaderEngineCount * core.shaderArraysPerEngineCount * core.computeUnitsPerShaderArray;
    }
    if (has_device_extension(device, VK_ARM_SHADER_CORE_BUILTINS_EXTENSION_NAME)) {
        VkPhysicalDeviceShaderCoreBuiltinsPropertiesARM core{
            VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_BUILTINS_PROPERTIES_ARM};
        properties.pNext = &core;
        vkGetPhysicalDeviceProperties2(device, &properties);
        return core.shaderCoreCount;
    }
    return 0;
}

DeviceInfo describe(VkPhysicalDevice device, int index) {
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    VkPhysicalDeviceVulkan12Features v12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
    VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    VkPhysicalDeviceProperties base{};
    vkGetPhysicalDeviceProperties(device, &base);
    // The instance asks for Vulkan 1.2, so the feature is used through the extension even on 1.3 devices.
    const bool has_dot = has_device_extension(device, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
    features.pNext = &v11;
    v11.pNext = &v12;
    if (has_dot) v12.pNext = &dot;
    vkGetPhysicalDeviceFeatures2(device, &features);

    VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
    VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceMaintenance3Properties maintenance3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties.pNext = &driver;
    driver.pNext = &subgroup;
    subgroup.pNext = &maintenance3;
    vkGetPhysicalDeviceProperties2(device, &properties);

    DeviceInfo info;
    info.index = index;
    info.name = base.deviceName;
    info.type = type_name(base.deviceType);
    info.driver = std::string(driver.driverName) + " " + driver.driverInfo;
    info.api_version = version_string(base.apiVersion);
    info.vendor_id = base.vendorID;
    // A CPU driver runs workgroups on the host's threads.
    info.compute_units =
        base.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? std::thread::hardware_concurrency() : read_compute_units(device);
    info.max_storage_buffer_range_bytes = base.limits.maxStorageBufferRange;
    info.max_allocation_bytes = maintenance3.maxMemoryAllocationSize;
    info.subgroup_size = subgroup.subgroupSize;
    info.max_workgroup_count_x = base.limits.maxComputeWorkGroupCount[0];
    info.max_workgroup_threads = std::min(base.limits.maxComputeWorkGroupInvocations, base.limits.maxComputeWorkGroupSize[0]);
    info.max_shared_memory_bytes = base.limits.maxComputeSharedMemorySize;
    info.max_storage_buffers_per_shader =
        std::min(base.limits.maxPerStageDescriptorStorageBuffers, base.limits.maxDescriptorSetStorageBuffers);
    info.storage_16bit = v11.storageBuffer16BitAccess == VK_TRUE && features.features.shaderInt16 == VK_TRUE;
    info.float16_arithmetic = v12.shaderFloat16 == VK_TRUE;
    info.storage_8bit = v12.storageBuffer8BitAccess == VK_TRUE;
    info.int8_arithmetic = v12.shaderInt8 == VK_TRUE;
    info.integer_dot_product = has_dot && dot.shaderIntegerDotProduct == VK_TRUE;
    info.subgroup_arithmetic = (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0 &&
                               (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0;
    const int family = compute_queue_family(device);
    info.compute_queue = family >= 0;
    info.vulkan_1_2 = base.apiVersion >= VK_API_VERSION_1_2;
    if (family >= 0) {
        uint32_t count = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(device, &count, nullptr);
        std::vector<VkQueueFamilyProperties> families(count);
        vkGetPhysicalDeviceQueueFamilyProperties(device, &count, families.data());
        info.timestamps = families[static_cast<size_t>(family)].timestampValidBits > 0 &&
                          base.limits.timestampComputeAndGraphics == VK_TRUE;
    }
    read_heaps(device, info);
    info.shortfalls = device_shortfalls(info);
    return info;
}

bool has_instance_extension(const char* name) {
    uint32_t count = 0;
    vkEnumerateInstanceExtensionProperties(nullptr, &count, nullptr);
    std::vector<VkExtensionProperties> extensions(count);
    vkEnumerateInstanceExtensionProperties(nullptr, &count, extensions.data());
    return std::any_of(extensions.begin(), extensions.end(),
                       [&](const VkExtensionProperties& e) { return std::strcmp(e.extensionName, name) == 0; });
}

// With portability enumeration (where the loader offers it), drivers that implement Vulkan
// on top of another API (MoltenVK on macOS) are listed too.
VkInstance create_plain_instance(const std::vector<const char*>& layers, std::vector<const char*> extensions,
                                 const void* next = nullptr) {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "InferScope";
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo create{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    create.pNext = next;
    if (has_instance_extension(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
        extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
        create.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
    }
    create.pApplicationInfo = &app;
    create.enabledLayerCount = static_cast<uint32_t>(layers.size());
    create.ppEnabledLayerNames = layers.data();
    create.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    create.ppEnabledExtensionNames = extensions.data();
    VkInstance instance = VK_NULL_HANDLE;
    vk_check(vkCreateInstance(&create, nullptr, &instance), "vkCreateInstance (is a Vulkan driver installed?)");
    return instance;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    return devices;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string joined(const std::vector<std::string>& phrases) {
    std::string all;
    for (const std::string& p : phrases) all += (all.empty() ? "" : ", ") + p;
    return all;
}

DeviceInfo pick(const std::vector<DeviceInfo>& devices) {
    if (devices.empty()) throw Error("no Vulkan device found (no driver, or no Vulkan loader)");
    const char* wanted = std::getenv("INFERSCOPE_VK_DEVICE");
    if (wanted != nullptr && *wanted != '\0') {
        const std::string w = wanted;
        const bool is_index = std::all_of(w.begin(), w.end(), [](unsigned char c) { return std::isdigit(c); });
        for (const DeviceInfo& d : devices) {
            const bool match = is_index ? std::to_string(d.index) == w : lower(d.name).find(lower(w)) != std::string::npos;
            if (!match) continue;
            if (!d.usable())
                throw UnsupportedError("Vulkan device '" + d.name + "' (INFERSCOPE_VK_DEVICE=" + w +
                                       ") cannot run the backend: " + joined(d.shortfalls));
            return d;
        }
        throw InvalidArgument("INFERSCOPE_VK_DEVICE=" + w + " matches no Vulkan device (see inferscope-cli devices)");
    }
    const DeviceInfo* best = nullptr;
    std::string why_not;
    for (const DeviceInfo& d : devices) {
        if (d.usable() && (best == nullptr || type_rank(d.type) < type_rank(best->type))) best = &d;
        if (!d.usable()) why_not += (why_not.empty() ? "" : "; ") + ("'" + d.name + "': " + joined(d.shortfalls));
    }
    if (best == nullptr) throw UnsupportedError("no Vulkan device can run the backend (" + why_not + ")");
    return *best;
}

}  // namespace

std::vector<DeviceInfo> list_vulkan_devices() {
    VkInstance instance = VK_NULL_HANDLE;
    try {
        instance = create_plain_instance({}, {});
    } catch (const Error&) {
        return {};
    }
    std::vector<DeviceInfo> devices;
    const auto physical = physical_devices(instance);
    for (size_t i = 0; i < physical.size(); ++i) devices.push_back(describe(physical[i], static_cast<int>(i)));
    vkDestroyInstance(instance, nullptr);
    return devices;
}

std::vector<std::string> device_shortfalls(const DeviceInfo& info) {
    std::vector<std::string> lacks;
    if (!info.vulkan_1_2) lacks.push_back("Vulkan " + info.api_version + " (1.2 needed)");
    if (!info.compute_queue) lacks.push_back("no compute queue");
    if (!info.storage_16bit) lacks.push_back("no 16-bit storage buffers with shaderInt16");
    if (info.max_storage_buffers_per_shader < kRequiredStorageBuffersPerShader) {
        lacks.push_back(std::to_string(info.max_storage_buffers_per_shader) + " storage buffers per shader (" +
                        std::to_string(kRequiredStorageBuffersPerShader) + " needed)");
    }
    if (info.max_workgroup_threads < kRequiredWorkgroupThreads) {
        lacks.push_back(std::to_string(info.max_workgroup_threads) + " threads per workgroup (" +
                        std::to_string(kRequiredWorkgroupThreads) + " needed)");
    }
    if (info.max_shared_memory_bytes < kRequiredSharedMemoryBytes) {
        lacks.push_back(std::to_string(info.max_shared_memory_bytes) + " bytes of shared memory per workgroup (" +
                        std::to_string(kRequiredSharedMemoryBytes) + " needed)");
    }
    return lacks;
}

DeviceInfo choose_vulkan_device() { return pick(list_vulkan_devices()); }

DeviceInfo choose_vulkan_device(const std::vector<DeviceInfo>& devices) { return pick(devices); }

uint64_t device_local_budget_bytes(const DeviceInfo& info) {
    uint64_t best = 0;
    for (const MemoryHeapInfo& h : info.heaps) {
        if (h.device_local) best = std::max(best, h.budget_bytes > 0 ? h.budget_bytes : h.size_bytes);
    }
    return best;
}

std::string mib_text(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

void check_kv_cache_fits(const DeviceInfo& info, uint64_t weight_bytes, uint64_t kv_bytes, int64_t kv_tokens) {
    const uint64_t budget = device_local_budget_bytes(info);
    if (budget == 0 || weight_bytes + kv_bytes <= budget) return;
    throw CapacityError("the KV cache of " + std::to_string(kv_tokens) + " tokens needs " + mib_text(kv_bytes) +
                        " of device memory beside the weights' " + mib_text(weight_bytes) + "; " + info.name +
                        " has a device-local budget of " + mib_text(budget) + ": lower the context size (-c)");
}

VkContext::VkContext(const ContextOptions& options)
    : staging_limit_bytes_(std::max<uint64_t>(options.staging_bytes, 16)), submission_timeout_(options.submission_timeout) {
    create_instance(options.validation);
    try {
        create_device();
        if (options.max_workgroups_x > 0) {
            info_.max_workgroup_count_x = std::min(info_.max_workgroup_count_x, options.max_workgroups_x);
        }
        if (options.without_subgroup_arithmetic) info_.subgroup_arithmetic = false;
        if (options.max_shared_memory_bytes > 0) {
            info_.max_shared_memory_bytes = std::min(info_.max_shared_memory_bytes, options.max_shared_memory_bytes);
        }
        if (options.max_storage_buffers_per_shader > 0) {
            info_.max_storage_buffers_per_shader =
                std::min(info_.max_storage_buffers_per_shader, options.max_storage_buffers_per_shader);
        }
    } catch (...) {
        destroy();
        throw;
    }
}

VkContext::~VkContext() { destroy(); }

void VkContext::destroy() {
    if (device_ != VK_NULL_HANDLE) {
        vkDeviceWaitIdle(device_);
        staging_.reset();
        if (fence_ != VK_NULL_HANDLE) vkDestroyFence(device_, fence_, nullptr);
        if (command_pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(device_, command_pool_, nullptr);
        vkDestroyDevice(device_, nullptr);
        device_ = VK_NULL_HANDLE;
    }
    if (messenger_ != VK_NULL_HANDLE) {
        auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
            vkGetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
        if (destroy != nullptr) destroy(instance_, messenger_, nullptr);
        messenger_ = VK_NULL_HANDLE;
    }
    if (instance_ != VK_NULL_HANDLE) vkDestroyInstance(instance_, nullptr);
    instance_ = VK_NULL_HANDLE;
}

VKAPI_ATTR VkBool32 VKAPI_CALL VkContext::on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                     VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                     void* self) {
    if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        static_cast<VkContext*>(self)->validation_errors_.fetch_add(1);
        std::fprintf(stderr, "Vulkan validation error: %s\n", data->pMessage);
    } else if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
        std::fprintf(stderr, "Vulkan validation warning: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

void VkContext::create_instance(bool validation) {
    const bool with_layer = validation && has_layer(kValidationLayer);
    std::vector<const char*> layers;
    std::vector<const char*> extensions;
    const VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
    VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    if (with_layer) {
        layers.push_back(kValidationLayer);
        extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
        if (kSyncValidation) extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    }
    instance_ = create_plain_instance(layers, extensions, with_layer && kSyncValidation ? &features : nullptr);
    if (!with_layer) return;
    VkDebugUtilsMessengerCreateInfoEXT create{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
    create.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    create.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
    create.pfnUserCallback = &VkContext::on_message;
    create.pUserData = this;
    auto make = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vkGetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (make != nullptr) vk_check(make(instance_, &create, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
}

void VkContext::create_device() {
    info_ = pick(list_vulkan_devices());
    physical_ = physical_devices(instance_).at(static_cast<size_t>(info_.index));
    queue_family_ = static_cast<uint32_t>(compute_queue_family(physical_));
    const float priority = 1.0f;
    VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue.queueFamilyIndex = queue_family_;
    queue.queueCount = 1;
    queue.pQueuePriorities = &priority;
    VkPhysicalDeviceVulkan11Features v11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
    v11.storageBuffer16BitAccess = VK_TRUE;
    VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
    features.pNext = &v11;
    features.features.shaderInt16 = VK_TRUE;  // narrowing stores into 16-bit words (the KV cache stores)
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
    dot.shaderIntegerDotProduct = VK_TRUE;  // matvec.comp's integer-dot build, matmul_dot_tiled.comp
    std::vector<const char*> extensions;
    if (info_.integer_dot_product) {
        extensions.push_back(VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME);
        v11.pNext = &dot;
    }
    for (const char* optional : {VK_EXT_MEMORY_BUDGET_EXTENSION_NAME, kPortabilitySubset}) {
        // A portability driver must have its subset extension enabled when it lists it.
        if (has_device_extension(physical_, optional)) extensions.push_back(optional);
    }
    VkDeviceCreateInfo create{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    create.pNext = &features;
    create.queueCreateInfoCount = 1;
    create.pQueueCreateInfos = &queue;
    create.enabledExtensionCount = static_cast<uint32_t>(extensions.size());
    create.ppEnabledExtensionNames = extensions.data();
    vk_check(vkCreateDevice(physical_, &create, nullptr, &device_), "vkCreateDevice");
    vkGetDeviceQueue(device_, queue_family_, 0, &queue_);
    vkGetPhysicalDeviceMemoryProperties(physical_, &memory_);
    VkPhysicalDeviceProperties properties{};
    vkGetPhysicalDeviceProperties(physical_, &properties);
    timestamp_period_ns_ = properties.limits.timestampPeriod;

    VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool.queueFamilyIndex = queue_family_;
    vk_check(vkCreateCommandPool(device_, &pool, nullptr, &command_pool_), "vkCreateCommandPool");
    VkFenceCreateInfo fence{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk_check(vkCreateFence(device_, &fence, nullptr, &fence_), "vkCreateFence");
}

uint32_t VkContext::memory_type(uint32_t allowed_bits, Buffer::Kind kind) const {
    // Host buffers: coherent mapped memory, cached when available (logits are read back).
    const VkMemoryPropertyFlags required = kind == Buffer::Kind::Device
                                               ? VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
                                               : VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    const VkMemoryPropertyFlags preferred = kind == Buffer::Kind::Device ? 0 : VK_MEMORY_PROPERTY_HOST_CACHED_BIT;
    int fallback = -1;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        const VkMemoryPropertyFlags flags = memory_.memoryTypes[i].propertyFlags;
        if (!(allowed_bits & (1u << i)) || (flags & required) != required) continue;
        if ((flags & preferred) == preferred) return i;
        if (fallback < 0) fallback = static_cast<int>(i);
    }
    if (fallback < 0) throw UnsupportedError("Vulkan device has no suitable memory type");
    return static_cast<uint32_t>(fallback);
}

int VkContext::unified_memory_type(uint32_t allowed_bits) const {
    if (info_.type != "integrated" && info_.type != "cpu") return -1;
    const VkMemoryPropertyFlags required =
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
        if ((allowed_bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & required) == required)
            return static_cast<int>(i);
    }
    return -1;
}

namespace {
std::string seconds_text(std::chrono::nanoseconds duration) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1e9);
    return text;
}
}  // namespace

VkCommandBuffer VkContext::allocate_command_buffer() {
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = command_pool_;
    allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    allocate.commandBufferCount = 1;
    VkCommandBuffer cmd = VK_NULL_HANDLE;
    vk_check(vkAllocateCommandBuffers(device_, &allocate, &cmd), "vkAllocateCommandBuffers");
    return cmd;
}

void VkContext::submit_and_wait(VkCommandBuffer cmd) { submit(cmd, false); }

void VkContext::submit(VkCommandBuffer cmd, bool one_time) {
    try {
        finish_pending();
        VkSubmitInfo submit{VK_STRUCTURE_TYPE_SUBMIT_INFO};
        submit.commandBufferCount = 1;
        submit.pCommandBuffers = &cmd;
        vk_check(vkQueueSubmit(queue_, 1, &submit, fence_), "vkQueueSubmit");
    } catch (...) {
        if (one_time) vkFreeCommandBuffers(device_, command_pool_, 1, &cmd);
        throw;
    }
    pending_ = true;
    if (one_time) pending_one_time_ = cmd;
    await_submission();
}

void VkContext::finish_pending() {
    if (pending_) await_submission();
}

// A fence cannot be reset, nor a command buffer freed, while the submission it belongs to runs:
// a failed wait leaves both to the next call.
void VkContext::await_submission() {
    const VkResult waited = vkWaitForFences(device_, 1, &fence_, VK_TRUE, static_cast<uint64_t>(submission_timeout_.count()));
    if (waited == VK_TIMEOUT) {
        throw Error("Vulkan: the GPU (" + info_.name + ") did not finish its work within " + seconds_text(submission_timeout_) +
                    "; the next call waits for it first");
    }
    vk_check(waited, "vkWaitForFences");
    pending_ = false;
    if (pending_one_time_ != VK_NULL_HANDLE) vkFreeCommandBuffers(device_, command_pool_, 1, &pending_one_time_);
    pending_one_time_ = VK_NULL_HANDLE;
    vk_check(vkResetFences(device_, 1, &fence_), "vkResetFences");
}

void VkContext::wait_idle() noexcept {
    if (device_ != VK_NULL_HANDLE) vkDeviceWaitIdle(device_);
}

void VkContext::free_command_buffer(VkCommandBuffer cmd) { vkFreeCommandBuffers(device_, command_pool_, 1, &cmd); }

void VkContext::run_now(const std::function<void(VkCommandBuffer)>& record) {
    VkCommandBuffer cmd = allocate_command_buffer();
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    try {
        vk_check(vkBeginCommandBuffer(cmd, &begin), "vkBeginCommandBuffer");
        record(cmd);
        vk_check(vkEndCommandBuffer(cmd), "vkEndCommandBuffer");
    } catch (...) {
        vkFreeCommandBuffers(device_, command_pool_, 1, &cmd);
        throw;
    }
    submit(cmd, true);
}

Buffer& VkContext::staging(uint64_t bytes) {
    const uint64_t wanted = std::min(bytes, staging_limit_bytes_);
    if (!staging_ || staging_->size_bytes() < wanted) {
        staging_.reset();
        staging_ = std::make_unique<Buffer>(*this, wanted, Buffer::Kind::Host);
    }
    return *staging_;
}

double VkContext::time_calls_us(const std::function<void(VkCommandBuffer)>& record, int reps) {
    VkQueryPoolCreateInfo create{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    create.queryType = VK_QUERY_TYPE_TIMESTAMP;
    create.queryCount = 2;
    VkQueryPool queries = VK_NULL_HANDLE;
    vk_check(vkCreateQueryPool(device_, &create, nullptr, &queries), "vkCreateQueryPool");
    uint64_t stamps[2] = {};
    VkResult result = VK_SUCCESS;
    try {
        run_now([&](VkCommandBuffer cmd) {
            vkCmdResetQueryPool(cmd, queries, 0, 2);
            record(cmd);
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 0);
            for (int i = 0; i < reps; ++i) record(cmd);
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries, 1);
        });
        result = vkGetQueryPoolResults(device_, queries, 0, 2, sizeof stamps, stamps, sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    } catch (...) {
        wait_idle();  // a submission whose wait failed may still write the queries
        vkDestroyQueryPool(device_, queries, nullptr);
        throw;
    }
    vkDestroyQueryPool(device_, queries, nullptr);
    vk_check(result, "vkGetQueryPoolResults");
    return static_cast<double>(stamps[1] - stamps[0]) * timestamp_period_ns_ / 1000.0 / reps;
}

void VkContext::upload(const Buffer& dst, uint64_t dst_offset_bytes, const void* src, uint64_t bytes) {
    if (bytes == 0) return;
    finish_pending();
    if (dst.mapped() != nullptr) {  // coherent memory: visible to the device's next submission
        std::memcpy(static_cast<char*>(dst.mapped()) + dst_offset_bytes, src, bytes);
        return;
    }
    for (uint64_t done = 0; done < bytes;) {
        const Buffer& stage = staging(bytes - done);
        const uint64_t chunk = std::min(bytes - done, stage.size_bytes());
        std::memcpy(stage.mapped(), static_cast<const char*>(src) + done, chunk);
        run_now([&](VkCommandBuffer cmd) {
            const VkBufferCopy region{0, dst_offset_bytes + done, chunk};
            vkCmdCopyBuffer(cmd, stage.handle(), dst.handle(), 1, &region);
        });
        done += chunk;
    }
}

void VkContext::download(const Buffer& src, uint64_t src_offset_bytes, void* dst, uint64_t bytes) {
    finish_pending();
    for (uint64_t done = 0; done < bytes;) {
        const Buffer& stage = staging(bytes - done);
        const uint64_t chunk = std::min(bytes - done, stage.size_bytes());
        run_now([&](VkCommandBuffer cmd) {
            const VkBufferCopy region{src_offset_bytes + done, 0, chunk};
            vkCmdCopyBuffer(cmd, src.handle(), stage.handle(), 1, &region);
        });
        std::memcpy(static_cast<char*>(dst) + done, stage.mapped(), chunk);
        done += chunk;
    }
}

void VkContext::count_buffer(uint64_t bytes) const {
    int left = buffers_before_refusal_.load();
    while (left >= 0 && !buffers_before_refusal_.compare_exchange_weak(left, left - 1)) {
    }
    if (left == 0) throw CapacityError("Vulkan: cannot allocate " + std::to_string(bytes) + " bytes (refused for the test)");
}

Buffer::Buffer(const VkContext& ctx, uint64_t size_bytes, Kind kind) : device_(ctx.device()), size_(size_bytes) {
    check_allocation_fits(ctx.info(), size_bytes);
    ctx.count_buffer(size_bytes);
    buffer_ = create_storage_buffer(device_, size_bytes);
    VkMemoryRequirements requirements{};
    vkGetBufferMemoryRequirements(device_, buffer_, &requirements);
    try {
        memory_ = allocate_memory(device_, requirements.size, ctx.memory_type(requirements.memoryTypeBits, kind),
                                  kind == Kind::Device ? "device memory" : "host-visible memory");
        vk_check(vkBindBufferMemory(device_, buffer_, memory_, 0), "vkBindBufferMemory");
        if (kind == Kind::Host) vk_check(vkMapMemory(device_, memory_, 0, VK_WHOLE_SIZE, 0, &mapped_), "vkMapMemory");
    } catch (...) {
        release();
        throw;
    }
}

Buffer Buffer::placed(VkDevice device, VkBuffer buffer, uint64_t size_bytes, void* mapped) {
    Buffer b;
    b.device_ = device;
    b.buffer_ = buffer;
    b.size_ = size_bytes;
    b.mapped_ = mapped;
    return b;
}

VkBuffer create_storage_buffer(VkDevice device, uint64_t size_bytes) {
    VkBufferCreateInfo create{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    create.size = std::max<uint64_t>(size_bytes, 16);
    create.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
    create.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
    VkBuffer buffer = VK_NULL_HANDLE;
    vk_check(vkCreateBuffer(device, &create, nullptr, &buffer), "vkCreateBuffer");
    return buffer;
}

void check_allocation_fits(const DeviceInfo& info, uint64_t bytes) {
    const uint64_t largest = info.max_allocation_bytes;
    if (largest > 0 && bytes > largest) {
        throw CapacityError("Vulkan: a buffer of " + std::to_string(bytes) + " bytes exceeds the largest allocation " +
                            "the device allows (" + std::to_string(largest) + " bytes)");
    }
}

VkDeviceMemory allocate_memory(VkDevice device, uint64_t bytes, uint32_t type, const std::string& what) {
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = bytes;
    allocate.memoryTypeIndex = type;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    const VkResult result = vkAllocateMemory(device, &allocate, nullptr, &memory);
    if (result == VK_ERROR_OUT_OF_DEVICE_MEMORY || result == VK_ERROR_OUT_OF_HOST_MEMORY) {
        throw CapacityError("Vulkan: cannot allocate " + std::to_string(bytes) + " bytes of " + what);
    }
    vk_check(result, "vkAllocateMemory");
    return memory;
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
    if (this != &other) {
        release();
        std::swap(device_, other.device_);
        std::swap(buffer_, other.buffer_);
        std::swap(memory_, other.memory_);
        std::swap(size_, other.size_);
        std::swap(mapped_, other.mapped_);
    }
    return *this;
}

void Buffer::release() {
    if (device_ == VK_NULL_HANDLE) return;
    if (buffer_ != VK_NULL_HANDLE) vkDestroyBuffer(device_, buffer_, nullptr);
    if (memory_ != VK_NULL_HANDLE) vkFreeMemory(device_, memory_, nullptr);
    buffer_ = VK_NULL_HANDLE;
    memory_ = VK_NULL_HANDLE;
    mapped_ = nullptr;
    size_ = 0;
}

}  // namespace inferscope::gpu
