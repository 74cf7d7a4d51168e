// `devices`: the Vulkan devices the GPU backend can use, and which one it would pick.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#ifdef INFERSCOPE_HAS_VULKAN
#include "gpu/vk_tuning.h"
#include "gpu/vulkan_devices.h"
#endif

namespace inferscope::cli {
namespace {

#ifdef INFERSCOPE_HAS_VULKAN
nlohmann::json device_json(const gpu::DeviceInfo& d, bool chosen) {
    nlohmann::json heaps = nlohmann::json::array();
    for (const gpu::MemoryHeapInfo& h : d.heaps) {
        heaps.push_back({{"size_bytes", h.size_bytes}, {"budget_bytes", h.budget_bytes}, {"device_local", h.device_local}});
    }
    const gpu::KernelTuning tuning = gpu::kernel_tuning(d);
    return {{"index", d.index},
            {"name", d.name},
            {"type", d.type},
            {"driver", d.driver},
            {"api_version", d.api_version},
            {"chosen", chosen},
            {"usable", d.usable()},
            {"shortfalls", d.shortfalls},
            {"max_workgroup_threads", d.max_workgroup_threads},
            {"heaps", heaps},
            {"max_storage_buffer_range_bytes", d.max_storage_buffer_range_bytes},
            {"subgroup_size", d.subgroup_size},
            {"max_shared_memory_bytes", d.max_shared_memory_bytes},
            {"max_storage_buffers_per_shader", d.max_storage_buffers_per_shader},
            {"vendor_id", d.vendor_id},
            {"compute_units", d.compute_units},
            {"kernel_tuning",
             {{"name", tuning.name},
              {"matvec_units_per_thread", tuning.matvec_units_per_thread},
              {"matvec_tall_units_per_thread", tuning.matvec_tall_units_per_thread},
              {"matvec_group_threads", tuning.matvec_group_threads},
              {"matvec_wide_group_threads", tuning.matvec_wide_group_threads},
              {"matvec_tall_rows", tuning.matvec_tall_rows},
              {"attention_workgroups", tuning.attention_workgroups},
              // What the backend does on this device (Kernels::integer_dot), not only what the entry asks.
              {"matvec_integer_dot", gpu::integer_dot_in_use(d, tuning)}}},
            {"features",
             {{"storage_16bit", d.storage_16bit},
              {"float16_arithmetic", d.float16_arithmetic},
              {"storage_8bit", d.storage_8bit},
              {"int8_arithmetic", d.int8_arithmetic},
              {"integer_dot_product", d.integer_dot_product},
              {"subgroup_arithmetic", d.subgroup_arithmetic},
              {"timestamps", d.timestamps}}}};
}

void print_device(const nlohmann::json& d) {
    const std::string type = d["type"].get<std::string>();
    std::printf("%s[%d] %s (%s)%s\n", d["chosen"].get<bool>() ? "* " : "  ", d["index"].get<int>(),
                d["name"].get<std::string>().c_str(), type == "cpu" ? "cpu: a CPU driver, not a GPU" : type.c_str(),
                d["usable"].get<bool>() ? "" : "  [not usable]");
    for (const auto& lack : d["shortfalls"]) std::printf("      lacks: %s\n", lack.get<std::string>().c_str());
    std::printf(
        "      driver %s, Vulkan %s, max storage binding %.0f MiB, subgroup %u, workgroups of up to %u threads "
        "with %u KiB of shared memory\n",
        d["driver"].get<std::string>().c_str(), d["api_version"].get<std::string>().c_str(),
        d["max_storage_buffer_range_bytes"].get<double>() / (1024.0 * 1024.0), d["subgroup_size"].get<unsigned>(),
        d["max_workgroup_threads"].get<unsigned>(), d["max_shared_memory_bytes"].get<unsigned>() / 1024);
    const unsigned units = d["compute_units"].get<unsigned>();
    const auto& tuning = d["kernel_tuning"];
    std::printf("      vendor 0x%04x, %s, kernel tuning %s (attention fills %u workgroups; quantized products %s)\n",
                d["vendor_id"].get<unsigned>(),
                units > 0 ? (std::to_string(units) + " compute units").c_str() : "compute units not reported",
                tuning["name"].get<std::string>().c_str(), tuning["attention_workgroups"].get<unsigned>(),
                tuning["matvec_integer_dot"].get<bool>() ? "on encoded inputs, integer dot products" : "on F32 inputs");
    for (const auto& h : d["heaps"]) {
        const double budget_mib = h["budget_bytes"].get<double>() / (1024.0 * 1024.0);
        // A driver without VK_EXT_memory_budget reports none (0): the heap's size is what there is.
        const std::string budget =
            budget_mib > 0 ? "budget " + std::to_string(std::llround(budget_mib)) + " MiB" : "no budget reported";
        std::printf("      heap %.0f MiB%s, %s\n", h["size_bytes"].get<double>() / (1024.0 * 1024.0),
                    h["device_local"].get<bool>() ? " device-local" : "", budget.c_str());
    }
    std::string features;
    for (const auto& [name, on] : d["features"].items()) features += " " + name + (on.get<bool>() ? "=yes" : "=no");
    std::printf("      features:%s\n", features.c_str());
}

void run_devices(bool json) {
    const auto devices = gpu::list_vulkan_devices();
    int chosen = -1;
    std::string why_none;
    try {
        chosen = gpu::choose_vulkan_device().index;
    } catch (const Error& e) {
        why_none = e.what();
    }
    nlohmann::json all = nlohmann::json::array();
    for (const auto& d : devices) all.push_back(device_json(d, d.index == chosen));
    std::vector<std::string> tunings;
    for (const gpu::KernelTuning& t : gpu::kernel_tuning_table()) tunings.push_back(t.name);
    if (json) {
        print_json({{"devices", all}, {"chosen", chosen}, {"error", why_none}, {"kernel_tunings", tunings}});
        return;
    }
    for (const auto& d : all) print_device(d);
    std::string names;
    for (const std::string& t : tunings) names += " " + t;
    std::printf("kernel tuning entries (INFERSCOPE_VK_TUNING):%s\n", names.c_str());
    if (chosen < 0) std::printf("no device for --backend vulkan: %s\n", why_none.c_str());
}
#else
void run_devices(bool) {
    throw UnsupportedError("this inferscope-cli was built without the Vulkan backend (INFERSCOPE_ENGINE_ONLY=ON)");
}
#endif

}  // namespace

void add_devices_command(CLI::App& app) {
    auto json = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("devices", "Vulkan devices for --backend vulkan (INFERSCOPE_VK_DEVICE picks one)");
    cmd->add_flag("--json", *json, "machine-readable JSON on stdout");
    cmd->callback([json] { run_devices(*json); });
}

}  // namespace inferscope::cli
