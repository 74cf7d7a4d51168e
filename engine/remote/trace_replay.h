#pragma once
// A request trace (generate_trace in engine/runtime/serving_sim.h: seeded arrivals, prompt and
// output lengths) replayed against a serving engine: each request sent at its arrival time
// as a streamed completion of the trace's own prompt token ids, and the latency distribution
// the server gives them, measured from each request's arrival as serve-sim measures it.
#include <span>
#include <string>
#include <vector>

#include "engine/core/progress.h"
#include "engine/remote/http_client.h"
#include "engine/remote/stream_bench.h"
#include "engine/runtime/scheduler.h"

namespace inferscope::remote {

struct ReplayOptions {
    std::string model;        // empty: the first model /v1/models lists
    bool ignore_eos = false;  // ask for each request's whole output length (see CompletionRequest)
};

struct ReplayedRequest {
    int id = 0;
    double arrival_s = 0;
    int prompt_tokens = 0;
    int asked_tokens = 0;
    double sent_late_ms = 0;  // sent this long after its arrival time
    StreamTiming timing;      // times from the send
    std::string error;        // not empty: the request failed, or was never sent ("cancelled")
    bool finished() const { return error.empty(); }
    double ttft_ms() const { return sent_late_ms + timing.ttft_ms; }  // from the arrival
    double e2e_ms() const { return sent_late_ms + timing.total_ms; }
};

struct ReplayReport {
    std::string model;
    std::vector<ReplayedRequest> requests;  // in trace order
    double makespan_s = 0;                   // first arrival to the last request's end
    int64_t tokens = 0;                      // completion tokens of the finished requests
    int failed = 0;                          // errors and requests never sent
    double tokens_per_s() const { return makespan_s > 0 ? static_cast<double>(tokens) / makespan_s : 0; }
    // Nearest-rank percentiles over the finished requests (ITL: over all their gaps); 0 when none.
    double ttft_ms(double percentile) const;
    double e2e_ms(double percentile) const;
    double itl_ms(double percentile) const;
};

// At most this many requests in one replay: each waits for its arrival on a thread of its own.
inline constexpr size_t kMaxReplayRequests = 512;

// Sends every request of `trace` (sorted by arrival) at its arrival time, each on its own
// connection, and waits for all to end. A request that fails is recorded with its error, not
// thrown; once `progress` is cancelled, requests not yet sent are not sent.
ReplayReport replay_trace(const RemoteTarget& target, std::span<const ServingRequest> trace, const ReplayOptions& options,
                          const Progress& progress = {});

}  // namespace inferscope::remote
