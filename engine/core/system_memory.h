#pragma once
// What this machine can still give: the kernel's estimate of memory available to a new
// allocation without swapping (MemAvailable in /proc/meminfo).
#include <cstdint>
#include <string>

namespace inferscope {

// 0 when it cannot be determined (no /proc, an unexpected format).
uint64_t available_memory_bytes();
// All the memory and swap there is (MemTotal + SwapTotal): the most that memory reserved now
// and touched later could ever get. 0 when unknown.
uint64_t total_memory_bytes();

// "1.50 GiB" / "512.0 MiB" / "900 bytes": a byte count as a reader takes it in.
std::string format_bytes(uint64_t bytes);

}  // namespace inferscope
