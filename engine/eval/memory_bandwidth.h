#pragma once
// Measures how fast this machine reads memory: the ceiling of memory-bound decode.
#include <cstdint>

namespace inferscope {

class ThreadPool;

struct BandwidthResult {
    double bytes_per_second = 0;  // median of the repetitions
    uint64_t buffer_bytes = 0;
    int threads = 0;
};

// Reads a buffer of `buffer_bytes` (far larger than the caches) with every pool thread
// reading its own part, `repetitions` times after one warm-up pass; reports the median.
BandwidthResult measure_read_bandwidth(ThreadPool& pool, uint64_t buffer_bytes = uint64_t{1} << 30, int repetitions = 5);

}  // namespace inferscope
