#pragma once
// Measures how fast this machine reads memory: the ceiling of memory-bound decode.
#include <cstddef>
#include <cstdint>

#include "engine/core/huge_page_buffer.h"

namespace inferscope {

class ThreadPool;

struct BandwidthResult {
    double bytes_per_second = 0;  // median of the repetitions
    uint64_t buffer_bytes = 0;
    int threads = 0;
};

// A buffer of `buffer_bytes` (far larger than the caches) held for repeated measurements,
// in 2 MiB pages, as the model's weights are held when the machine allows (file_bytes.h).
class ReadBandwidthProbe {
public:
    // Touches the buffer with the pool's threads. CapacityError naming the byte count when
    // it cannot be allocated.
    ReadBandwidthProbe(ThreadPool& pool, uint64_t buffer_bytes);
    // Every thread of `pool` reads its own part, `repetitions` times after one warm-up pass;
    // the median pass counts.
    BandwidthResult measure(ThreadPool& pool, int repetitions) const;

private:
    HugePageBuffer memory_;
    size_t words_ = 0;
};

}  // namespace inferscope
