#include "engine/core/system_memory.h"

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string_view>

namespace inferscope {

namespace {

// The sum of the named /proc/meminfo fields in bytes; 0 when any is missing.
uint64_t meminfo_bytes(std::initializer_list<std::string_view> fields) {
    std::ifstream in("/proc/meminfo");
    std::string line;
    uint64_t total = 0;
    size_t found = 0;
    while (std::getline(in, line)) {
        for (const std::string_view field : fields) {
            if (line.size() <= field.size() || line.compare(0, field.size(), field) != 0 || line[field.size()] != ':') continue;
            std::istringstream value(line.substr(field.size() + 1));
            uint64_t kib = 0;
            value >> kib;
            total += kib * 1024;
            ++found;
        }
    }
    return found == fields.size() ? total : 0;
}

}  // namespace

uint64_t available_memory_bytes() { return meminfo_bytes({"MemAvailable"}); }

uint64_t total_memory_bytes() { return meminfo_bytes({"MemTotal", "SwapTotal"}); }

std::string format_bytes(uint64_t bytes) {
    constexpr double kKiB = 1024.0;
    char text[48];
    const auto value = static_cast<double>(bytes);
    if (value >= kKiB * kKiB * kKiB) {
        std::snprintf(text, sizeof text, "%.2f GiB", value / (kKiB * kKiB * kKiB));
    } else if (value >= kKiB * kKiB) {
        std::snprintf(text, sizeof text, "%.1f MiB", value / (kKiB * kKiB));
    } else if (value >= kKiB) {
        std::snprintf(text, sizeof text, "%.1f KiB", value / kKiB);
    } else {
        std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
    }
    return text;
}

}  // namespace inferscope
