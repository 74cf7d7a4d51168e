#include "engine/core/system_memory.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace inferscope {

uint64_t available_memory_bytes() {
    std::ifstream in("/proc/meminfo");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("MemAvailable:", 0) != 0) continue;
        std::istringstream fields(line.substr(13));
        uint64_t kib = 0;
        fields >> kib;
        return kib * 1024;
    }
    return 0;
}

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
