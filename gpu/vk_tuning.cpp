#include "gpu/vk_tuning.h"

#include <algorithm>
#include <cstdlib>

#include "engine/core/error.h"

namespace inferscope::gpu {

const std::vector<KernelTuning>& kernel_tuning_table() {
    static const std::vector<KernelTuning> table = [] {
        const KernelTuning base;  // the shapes measured on an NVIDIA H200
        std::vector<KernelTuning> t;
        KernelTuning e = base;
        e.name = "default";
        t.push_back(e);

        e = base;
        e.name = "nvidia";
        e.vendor_id = kVendorNvidia;
        t.push_back(e);

        // Compute runs in waves of 64 (RADV, AMDVLK): teams are no smaller than a wave, so a
        // workgroup of 128 threads would hold only two one-row teams.
        e = base;
        e.name = "amd";
        e.vendor_id = kVendorAmd;
        e.matvec_group_threads = 256;
        t.push_back(e);

        // Integrated GPUs with tens of execution units: fewer, longer-running threads per row
        // and fewer attention workgroups.
        e = base;
        e.name = "intel";
        e.vendor_id = kVendorIntel;
        e.matvec_units_per_thread = 4;
        e.attention_workgroups = 128;
        t.push_back(e);

        // Phone and laptop GPUs of a few to a few dozen cores.
        for (const auto& [name, vendor] : {std::pair{"arm", kVendorArm}, std::pair{"qualcomm", kVendorQualcomm}}) {
            e = base;
            e.name = name;
            e.vendor_id = vendor;
            e.matvec_units_per_thread = 4;
            e.matvec_wide_group_threads = 128;
            e.attention_workgroups = 64;
            t.push_back(e);
        }

        // Apple GPUs through MoltenVK: 8 to 80 cores of 32-wide SIMD groups.
        e = base;
        e.name = "apple";
        e.vendor_id = kVendorApple;
        e.attention_workgroups = 128;
        t.push_back(e);

        // A CPU driver (lavapipe) runs one workgroup per host thread at a time: splitting the
        // context past one workgroup per thread only adds partials to reduce.
        e = base;
        e.name = "cpu-driver";
        e.attention_workgroups = 4;
        e.attention_workgroups_per_unit = 1;
        t.push_back(e);
        return t;
    }();
    return table;
}

KernelTuning kernel_tuning_named(const std::string& name) {
    std::string known;
    for (const KernelTuning& t : kernel_tuning_table()) {
        if (t.name == name) return t;
        known += (known.empty() ? "" : ", ") + t.name;
    }
    throw Error("unknown Vulkan kernel tuning '" + name + "' (known: " + known + ")");
}

KernelTuning kernel_tuning(const DeviceInfo& info, const std::string& entry) {
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
    return chosen;
}

}  // namespace inferscope::gpu
