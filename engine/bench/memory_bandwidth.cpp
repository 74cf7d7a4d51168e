#include "engine/bench/memory_bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "engine/backend/cpu/kernels/stream_read.h"
#include "engine/core/error.h"
#include "engine/core/thread_pool.h"

namespace inferscope {
ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool& pool, uint64_t buffer_bytes)
    : words_(static_cast<size_t>(buffer_bytes / sizeof(uint64_t))) {
    try {
        memory_ = HugePageBuffer(words_ * sizeof(uint64_t));
    } catch (const CapacityError&) {
        throw CapacityError("cannot allocate " + std::to_string(buffer_bytes) + " bytes for the bandwidth test");
    }
    auto* words = reinterpret_cast<uint64_t*>(memory_.data());
    pool.parallel_for(static_cast<int64_t>(words_), [&](int64_t begin, int64_t end) {
        std::memset(words + begin, 1, static_cast<size_t>(end - begin) * sizeof(uint64_t));
    });
}

BandwidthResult ReadBandwidthProbe::measure(ThreadPool& pool, int repetitions) const {
    const auto* words = reinterpret_cast<const uint64_t*>(memory_.data());
    const StreamReadFn read_words = stream_read_kernel(active_cpu_isa());
    std::atomic<uint64_t> checksum{0};
    std::vector<double> seconds_per_pass;
    for (int r = 0; r <= repetitions; ++r) {
        const auto start = std::chrono::steady_clock::now();
        pool.parallel_for(static_cast<int64_t>(words_), [&](int64_t begin, int64_t end) {
            checksum += read_words(words + begin, static_cast<size_t>(end - begin));
        });
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (r > 0) seconds_per_pass.push_back(seconds);  // the first pass is a warm-up
    }
    if (checksum.load() == 0) throw Error("bandwidth test read only zeros");  // keeps the reads alive
    BandwidthResult result;
    // The median pass: a single fast outlier (another tenant idle for a moment) would set a
    // floor no decode could ever reach again.
    std::sort(seconds_per_pass.begin(), seconds_per_pass.end());
    result.bytes_per_second = static_cast<double>(words_ * sizeof(uint64_t)) / seconds_per_pass[seconds_per_pass.size() / 2];
    result.buffer_bytes = words_ * sizeof(uint64_t);
    result.threads = pool.size();
    return result;
}

}  // namespace inferscope
