#pragma once
// What this machine can still give: the kernel's estimate of memory available to a new
// allocation without swapping (MemAvailable in /proc/meminfo).
#include <cstdint>
#include <string>

namespace inferscope {

// 0 when it cannot be determined (no /proc, an unexpected format).
uint64_t available_memory_bytes();

// "1.50 GiB" / "512.0 MiB" / "900 bytes": a byte count as a reader takes it in.
std::string format_bytes(uint64_t bytes);

}  // namespace inferscope
