#include "engine/remote/trace_replay.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/remote/served_model.h"

namespace inferscope::remote {
namespace {

using Clock = std::chrono::steady_clock;

std::vector<double> finished_values(const std::vector<ReplayedRequest>& requests, double (ReplayedRequest::*value)() const) {
    std::vector<double> values;
    for (const ReplayedRequest& r : requests) {
        if (r.finished()) values.push_back((r.*value)());
    }
    return values;
}

// Waits until `at`, looking at cancellation every 50 ms; false when cancelled first.
bool wait_until(Clock::time_point at, const Progress& progress) {
    while (Clock::now() < at) {
        if (progress.cancelled()) return false;
        std::this_thread::sleep_until(std::min(at, Clock::now() + std::chrono::milliseconds(50)));
    }
    return !progress.cancelled();
}

}  // namespace

double ReplayReport::ttft_ms(double percentile) const {
    return nearest_rank_percentile(finished_values(requests, &ReplayedRequest::ttft_ms), percentile);
}

double ReplayReport::e2e_ms(double percentile) const {
    return nearest_rank_percentile(finished_values(requests, &ReplayedRequest::e2e_ms), percentile);
}

double ReplayReport::itl_ms(double percentile) const {
    std::vector<double> gaps;
    for (const ReplayedRequest& r : requests) {
        if (!r.finished()) continue;
        const std::vector<double> g = r.timing.inter_token_ms();
        gaps.insert(gaps.end(), g.begin(), g.end());
    }
    return nearest_rank_percentile(std::move(gaps), percentile);
}

ReplayReport replay_trace(const RemoteTarget& target, std::span<const ServingRequest> trace, const ReplayOptions& options,
                          const Progress& progress) {
    if (trace.empty()) throw InvalidArgument("the trace has no requests");
    if (trace.size() > kMaxReplayRequests) {
        throw InvalidArgument("a replay sends at most " + std::to_string(kMaxReplayRequests) + " requests, not " +
                              std::to_string(trace.size()));
    }
    for (size_t i = 1; i < trace.size(); ++i) {
        if (trace[i].arrival_s < trace[i - 1].arrival_s) throw InvalidArgument("the trace must be sorted by arrival");
    }
    ReplayReport report;
    report.model = options.model;
    if (report.model.empty()) {
        HttpClient client(target);
        report.model = first_served_model(client);
    }
    report.requests.resize(trace.size());
    std::mutex done_mutex;
    int64_t done = 0;
    const Clock::time_point start = Clock::now();
    std::vector<std::thread> threads;
    threads.reserve(trace.size());
    for (size_t i = 0; i < trace.size(); ++i) {
        threads.emplace_back([&, i] {
            const ServingRequest& r = trace[i];
            ReplayedRequest& out = report.requests[i];
            out.id = r.id;
            out.arrival_s = r.arrival_s;
            out.prompt_tokens = static_cast<int>(r.prompt.size());
            out.asked_tokens = r.max_new_tokens;
            const auto arrival = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(r.arrival_s));
            if (!wait_until(arrival, progress)) {
                out.error = "cancelled";
            } else {
                out.sent_late_ms = std::chrono::duration<double, std::milli>(Clock::now() - arrival).count();
                try {
                    HttpClient client(target);
                    CompletionRequest request;
                    request.model = report.model;
                    request.max_tokens = r.max_new_tokens;
                    request.prompt_token_ids = r.prompt;
                    request.ignore_eos = options.ignore_eos;
                    out.timing = stream_completion(client, request);
                } catch (const Error& e) {
                    out.error = e.what();
                }
            }
            std::lock_guard<std::mutex> lock(done_mutex);
            progress.report("requests", ++done, static_cast<int64_t>(trace.size()));
        });
    }
    for (std::thread& t : threads) t.join();
    report.makespan_s = std::chrono::duration<double>(Clock::now() - start).count() - trace.front().arrival_s;
    for (const ReplayedRequest& r : report.requests) {
        if (r.finished()) {
            report.tokens += r.timing.completion_tokens;
        } else {
            ++report.failed;
        }
    }
    return report;
}

}  // namespace inferscope::remote
