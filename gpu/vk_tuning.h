#pragma once
// How the decode kernels are launched on each family of device: a table keyed by PCI vendor
// id (a CPU driver by its device type), with the attention's occupancy target taken from the
// device's compute-unit count where a vendor extension reports it. No Vulkan types.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpu/vulkan_devices.h"

namespace inferscope::gpu {

inline constexpr uint32_t kVendorAmd = 0x1002;
inline constexpr uint32_t kVendorApple = 0x106B;
inline constexpr uint32_t kVendorNvidia = 0x10DE;
inline constexpr uint32_t kVendorArm = 0x13B5;
inline constexpr uint32_t kVendorQualcomm = 0x5143;
inline constexpr uint32_t kVendorIntel = 0x8086;

struct KernelTuning {
    std::string name;    // the table entry: "nvidia", "amd", "intel", "arm", "qualcomm", "apple", "cpu-driver", "default"
    uint32_t vendor_id;  // the PCI vendor the entry is for; 0: none (default, cpu-driver)
    // matvec.comp: a row's team has about (row units / this) threads, a unit being 32 elements
    // of a block format or 8 of a float one; tall matrices (an output projection) use the second.
    uint32_t matvec_units_per_thread;
    uint32_t matvec_tall_units_per_thread;
    // Threads per workgroup: for layer matrices, and with the RMSNorm prologue or for tall
    // matrices (more rows share the prologue's read of x, fewer workgroups to launch).
    uint32_t matvec_group_threads;
    uint32_t matvec_wide_group_threads;
    uint32_t matvec_tall_rows;  // a matrix of at least this many rows is tall
    // attention_split.comp: enough (KV head, token, split) workgroups to keep the device busy;
    // with a known compute-unit count, this many per unit instead.
    uint32_t attention_workgroups;
    uint32_t attention_workgroups_per_unit;
    // Where the device has integer dot products: the weight types the CPU multiplies by Q8_0
    // inputs (Q8_0, Q4_0, Q5_0, IQ4_NL) or Q8_K inputs (the K-quants, IQ4_XS) do so on the GPU
    // too, decode on matvec.comp's integer-dot build (the input encoded once per workgroup, four
    // products per instruction).
    bool matvec_integer_dot;
};

// Whether the kernels reduce with subgroup arithmetic on this device: reported, and a subgroup
// size dividing the matrix kernels' 64-thread workgroups.
bool subgroup_reductions(const DeviceInfo& info);
// Whether encoded-input products run on integer dot products (Kernels::integer_dot): the tuning
// asks for them, the device has them, and subgroup reductions (the integer-dot build uses them).
bool integer_dot_in_use(const DeviceInfo& info, const KernelTuning& tuning);

// Every entry, "default" first.
const std::vector<KernelTuning>& kernel_tuning_table();

// The entry named `name`, unscaled; Error naming the known entries when there is none.
KernelTuning kernel_tuning_named(const std::string& name);

// The tuning for `info`: the entry named `entry` when given, else that of INFERSCOPE_VK_TUNING
// when set (to compare entries on one device), else its vendor's (a CPU driver's whatever the
// vendor; "default" for an unknown vendor), with attention_workgroups = compute units x
// attention_workgroups_per_unit where the device reports its units (DeviceInfo::compute_units).
// `integer_dot`, else INFERSCOPE_VK_INTEGER_DOT=0 or 1, overrides the entry's
// matvec_integer_dot (InvalidArgument for any other value of the variable).
KernelTuning kernel_tuning(const DeviceInfo& info, const std::string& entry = "", std::optional<bool> integer_dot = std::nullopt);

}  // namespace inferscope::gpu
