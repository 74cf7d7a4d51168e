#include "gpu/vk_tuning.h"

#include <algorithm>
#include <cstdlib>

#include "engine/core/error.h"

namespace inferscope::gpu {

const std::vector<KernelTuning>& kernel_tuning_table() {
    // Columns: name, vendor, mat-vec units per thread (layer, tall), threads per workgroup
    // (layer, with norm or tall), tall rows, attention workgroups (fixed, per compute unit),
    // integer-dot mat-vec. The GPUs' integer dot products run four byte products per lane and
    // instruction (NVIDIA's dp4a, AMD's and Intel's dot4), which is how llama.cpp's CUDA and
    // HIP backends multiply quantized weights.
    static const std::vector<KernelTuning> table = {
        // The mat-vec shapes and the attention target (512) of the H200 figures in
        // docs/PERFORMANCE.md; with the H200's 132 SMs reported, 528.
        {"default", 0, 2, 4, 128, 256, 16384, 512, 4, true},
        {"nvidia", kVendorNvidia, 2, 4, 128, 256, 16384, 512, 4, true},
        // Compute runs in waves of 64 (RADV, AMDVLK) and a team is no smaller than a wave: a
        // workgroup of 128 threads would hold only two one-row teams.
        {"amd", kVendorAmd, 2, 4, 256, 256, 16384, 512, 4, true},
        // Integrated GPUs of tens of execution units: fewer, longer-running threads per row.
        {"intel", kVendorIntel, 4, 4, 128, 256, 16384, 128, 4, true},
        // Phone and laptop GPUs of a few to a few dozen cores.
        {"arm", kVendorArm, 4, 4, 128, 128, 16384, 64, 4, true},
        {"qualcomm", kVendorQualcomm, 4, 4, 128, 128, 16384, 64, 4, true},
        // Apple GPUs through MoltenVK: 8 to 80 cores of 32-wide SIMD groups.
        {"apple", kVendorApple, 2, 4, 128, 256, 16384, 128, 4, true},
        // A CPU driver (lavapipe) runs one workgroup per host thread at a time: splitting the
        // context past one workgroup per thread only adds partials to reduce (measured on a
        // 2-thread host).
        {"cpu-driver", 0, 2, 4, 128, 256, 16384, 4, 1, true},
    };
    return table;
}

bool subgroup_reductions(const DeviceInfo& info) {
    constexpr uint32_t kWorkgroupThreads = 64;  // Kernels::kMatmulThreads
    return info.subgroup_arithmetic && info.subgroup_size > 0 && info.subgroup_size <= kWorkgroupThreads &&
           kWorkgroupThreads % info.subgroup_size == 0;
}

bool integer_dot_in_use(const DeviceInfo& info, const KernelTuning& tuning) {
    return tuning.matvec_integer_dot && info.integer_dot_product && subgroup_reductions(info);
}

KernelTuning kernel_tuning_named(const std::string& name) {
    std::string known;
    for (const KernelTuning& t : kernel_tuning_table()) {
        if (t.name == name) return t;
        known += (known.empty() ? "" : ", ") + t.name;
    }
    throw InvalidArgument("unknown Vulkan kernel tuning '" + name + "' (known: " + known + ")");
}

KernelTuning kernel_tuning(const DeviceInfo& info, const std::string& entry, std::optional<bool> integer_dot) {
    const char* from_environment = std::getenv("INFERSCOPE_VK_TUNING");
    const std::string forced = !entry.empty() ? entry : from_environment != nullptr ? from_environment : "";
    KernelTuning chosen = kernel_tuning_table().front();
    if (!forced.empty()) {
        chosen = kernel_tuning_named(forced);
    } else if (info.type == "cpu") {
        chosen = kernel_tuning_named("cpu-driver");
    } else {
        for (const KernelTuning& t : kernel_tuning_table()) {
            if (t.vendor_id != 0 && t.vendor_id == info.vendor_id) chosen = t;
        }
    }
    if (info.compute_units > 0)
        chosen.attention_workgroups = std::max(1u, info.compute_units * chosen.attention_workgroups_per_unit);
    if (const char* dot = std::getenv("INFERSCOPE_VK_INTEGER_DOT"); dot != nullptr) {
        const std::string value = dot;
        if (value != "0" && value != "1") {
            throw InvalidArgument("INFERSCOPE_VK_INTEGER_DOT must be 0 or 1, not '" + value + "'");
        }
        chosen.matvec_integer_dot = value == "1";
    }
    if (integer_dot.has_value()) chosen.matvec_integer_dot = *integer_dot;
    return chosen;
}

}  // namespace inferscope::gpu
