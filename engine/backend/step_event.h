#pragma once
// One record per forward pass: what the step did and what it cost. Observers (the CLI's
// --steps file, the GUI's charts) receive these as they happen.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope {

enum class StepPhase {
    Prefill,  // prompt tokens (possibly several sequences)
    Decode,   // one generated token per sequence
    Mixed,    // prompt chunks and decode tokens in the same step
};

std::string_view step_phase_name(StepPhase phase);  // "prefill", "decode", "mixed"

// GPU time of one kind of operation in a forward pass, summed over its dispatches (layers).
struct OpTime {
    std::string op;  // "attention", "ffn_down", ...
    int64_t gpu_ns = 0;
};

// How a GPU backend handed one forward pass to its device.
struct DeviceSubmission {
    int passes = 0;              // command buffers submitted (a long batch runs in several)
    int dispatches = 0;          // compute dispatches in them
    int barriers = 0;            // pipeline barriers in them
    int replayed = 0;            // of the passes, those whose command buffer was recorded for an earlier one
    int64_t host_record_ns = 0;  // host time spent recording the others
    int pipelines_created = 0;   // pipelines created to record them (a shape's first recording)
};

struct StepEvent {
    int64_t step = 0;            // index since the session started
    StepPhase phase = StepPhase::Prefill;
    int n_tokens = 0;            // tokens in the batch
    int n_sequences = 0;         // distinct sequences in the batch
    int context_length = 0;      // longest sequence in the batch after the step, in tokens
    int64_t wall_ns = 0;         // wall time of the forward pass
    uint64_t kv_bytes_in_use = 0;    // tokens cached x bytes per token, after the step
    uint64_t kv_bytes_reserved = 0;  // blocks handed out x block bytes, after the step
    std::vector<OpTime> gpu_ops;     // per-op GPU time from the device's timestamps; empty on the CPU
    int64_t gpu_ns = 0;              // sum of gpu_ops
};

}  // namespace inferscope
