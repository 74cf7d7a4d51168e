#pragma once
// Throughput benchmarks in the manner of llama-bench: prefill of P tokens ("ppP"), decode
// of N tokens one at a time ("tgN"), each optionally after filling the cache to a depth D
// ("tgN @ dD"), repeated after a warm-up run, with decode compared to the memory-bandwidth
// floor: a decode step reads every weight once (and the cache up to its depth), so
// tokens/s cannot exceed bandwidth / bytes read per token. Token ids are random; nothing
// is tokenized or sampled inside the timed region.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/backend/step_event.h"
#include "engine/bench/memory_bandwidth.h"
#include "engine/core/progress.h"

namespace inferscope {

class InferenceSession;
class Model;

struct BenchOptions {
    std::vector<int> prompt_lengths = {512};
    std::vector<int> generate_lengths = {128};
    std::vector<int> depths = {0};
    int repetitions = 5;
    int ubatch = 512;                    // prompt tokens per forward step
    bool measure_bandwidth = true;
    // The buffer the bandwidth is read from: once for the membw figure, and again just
    // before each timed decode run for that run's floor (the machine's memory speed can
    // change between minutes when it is shared, and a floor read in another minute can put a
    // run far above 100 % of it). The bench holds it, beside the model, until it returns.
    uint64_t bandwidth_buffer_bytes = uint64_t{1} << 30;
    // A given bandwidth for the floor instead of measuring host RAM (a GPU's memory
    // bandwidth when the backend runs there); 0: measure when measure_bandwidth is set.
    double given_bandwidth_bytes_per_s = 0;
    // Reported after each run (stage the test, "tg128"; item "warm-up" or "run 2/5"); once
    // cancelled, the report has no results.
    Progress progress;
};

// What a GPU backend submitted per decode step, averaged over the timed runs' steps.
struct DeviceStepCost {
    double dispatches = 0;
    double barriers = 0;
    double host_record_ms = 0;  // host time spent recording commands (0 for a replayed step)
    int steps = 0;
    int replayed_steps = 0;
};

struct BenchResult {
    std::string test;       // "pp512", "tg128", "tg128 @ d2048"
    int n_prompt = 0;
    int n_generate = 0;
    int depth = 0;
    std::vector<double> tokens_per_s;  // one per repetition (warm-up excluded)
    double mean = 0;
    double stddev = 0;
    uint64_t bytes_per_token = 0;      // decode: weights + K/V at this depth
    // decode, when measuring: the read bandwidth (bytes/s) just before each timed run
    std::vector<double> bandwidth_per_run;
    // decode: bandwidth / bytes_per_token (0 when unmeasured), from the median run's
    // bandwidth when measured per run
    double floor_tokens_per_s = 0;
    // decode: 100 x tokens/s / floor, the mean over the runs of each run against its own floor
    double percent_of_floor = 0;
    // decode on a backend that submits to a device (Vulkan)
    std::optional<DeviceStepCost> device_step;
};

struct BenchReport {
    uint64_t weight_bytes_per_token = 0;  // every matrix a decode step multiplies with
    std::optional<BandwidthResult> bandwidth;
    std::vector<BenchResult> results;
    bool cancelled = false;
};

// The weight bytes one decode step reads: all projection matrices and the output matrix
// (the embedding contributes one row, which is ignored).
uint64_t weight_bytes_read_per_token(const Model& model);

// Runs every test on a fresh sequence of the session, whose context must hold the largest
// depth plus the largest test (InvalidArgument otherwise).
BenchReport run_bench(InferenceSession& session, const BenchOptions& options);

}  // namespace inferscope
