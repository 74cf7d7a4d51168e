#include "engine/remote/stream_bench.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/remote/served_model.h"
#include "engine/remote/server_metrics.h"

namespace inferscope::remote {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) { return std::chrono::duration<double, std::milli>(Clock::now() - start).count(); }

nlohmann::json request_body(const CompletionRequest& r) {
    nlohmann::json body = {{"model", r.model},
                           {"max_tokens", r.max_tokens},
                           {"temperature", 0},
                           {"stream", true},
                           {"stream_options", {{"include_usage", true}}}};
    if (r.chat) {
        body["messages"] = nlohmann::json::array({{{"role", "user"}, {"content", r.prompt}}});
    } else if (!r.prompt_token_ids.empty()) {
        body["prompt"] = r.prompt_token_ids;
    } else {
        body["prompt"] = r.prompt;
    }
    if (r.ignore_eos) body["ignore_eos"] = true;
    if (r.top_logprobs > 0 && r.chat) {
        body["logprobs"] = true;
        body["top_logprobs"] = r.top_logprobs;
    } else if (r.top_logprobs > 0) {
        body["logprobs"] = r.top_logprobs;
    }
    return body;
}

// The top log-probabilities of each token in a choice: completions' legacy shape
// ("top_logprobs": [{piece: logprob}]) or chat's ("content": [{"top_logprobs": [{token, logprob}]}]),
// each sorted descending (JSON objects keep no order).
void take_logprobs(const nlohmann::json& logprobs, StreamTiming& t) {
    const auto number = [](const nlohmann::json& v) {
        if (!v.is_number()) throw RemoteError("a log-probability that is not a number: " + v.dump().substr(0, 60));
        return v.get<double>();
    };
    const size_t first_new = t.top_logprobs.size();
    if (logprobs.contains("top_logprobs") && logprobs["top_logprobs"].is_array()) {
        for (const auto& entry : logprobs["top_logprobs"]) {
            TopLogprobs top;
            if (entry.is_object()) {
                for (const auto& [piece, value] : entry.items()) top.emplace_back(piece, number(value));
            }
            t.top_logprobs.push_back(std::move(top));
        }
    } else if (logprobs.contains("content") && logprobs["content"].is_array()) {
        for (const auto& token : logprobs["content"]) {
            TopLogprobs top;
            if (token.is_object() && token.contains("top_logprobs") && token["top_logprobs"].is_array()) {
                for (const auto& entry : token["top_logprobs"]) {
                    if (entry.is_object() && entry.contains("token") && entry["token"].is_string() && entry.contains("logprob")) {
                        top.emplace_back(entry["token"].get<std::string>(), number(entry["logprob"]));
                    }
                }
            }
            t.top_logprobs.push_back(std::move(top));
        }
    }
    for (size_t i = first_new; i < t.top_logprobs.size(); ++i) {
        std::stable_sort(t.top_logprobs[i].begin(), t.top_logprobs[i].end(),
                         [](const auto& a, const auto& b) { return a.second > b.second; });
    }
}

// Adds one streamed chunk to the timing; false once the stream says it is done.
bool take_chunk(const std::string& data, bool chat, Clock::time_point start, StreamTiming& t) {
    if (data == "[DONE]") return false;
    nlohmann::json chunk;
    try {
        chunk = nlohmann::json::parse(data);
    } catch (const nlohmann::json::exception&) {
        throw RemoteError("the stream sent a chunk that is not JSON: " + data.substr(0, 120));
    }
    if (chunk.contains("error"))
        throw RemoteError("the server reported an error mid-stream: " + chunk["error"].dump().substr(0, 200));
    if (chunk.contains("usage") && chunk["usage"].is_object() && chunk["usage"].contains("completion_tokens")) {
        t.completion_tokens = chunk["usage"]["completion_tokens"].get<int>();
        t.usage_reported = true;
    }
    if (!chunk.contains("choices") || !chunk["choices"].is_array())
        throw RemoteError("a stream chunk without choices: " + data.substr(0, 120));
    for (const auto& choice : chunk["choices"]) {
        const nlohmann::json* piece = nullptr;
        if (chat && choice.contains("delta") && choice["delta"].contains("content")) piece = &choice["delta"]["content"];
        if (!chat && choice.contains("text")) piece = &choice["text"];
        if (piece != nullptr && piece->is_string() && !piece->get<std::string>().empty()) {
            const double at = ms_since(start);
            if (t.arrivals_ms.empty()) t.ttft_ms = at;
            t.arrivals_ms.push_back(at);
            t.text += piece->get<std::string>();
        }
        if (choice.contains("finish_reason") && choice["finish_reason"].is_string()) t.finish_reason = choice["finish_reason"];
        if (choice.contains("logprobs") && choice["logprobs"].is_object()) take_logprobs(choice["logprobs"], t);
    }
    return true;
}

void raise_to(std::optional<double>& most, const ServerReading& reading) {
    if (reading.value) most = most ? std::max(*most, *reading.value) : *reading.value;
}

// Reads /metrics every interval until stopped, keeping the most running and waiting requests
// and the highest KV-cache usage; the first page that cannot be read ends the reading.
class MetricsWatch {
public:
    MetricsWatch(const RemoteTarget& target, double interval_ms, ConcurrencyLevel& level)
        : target_(target), interval_(interval_ms), level_(level) {
        target_.timeout_s = std::min(target_.timeout_s, 5.0);  // a slow page must not hold the level's end long
        if (interval_ms > 0) thread_ = std::thread([this] { watch(); });
    }
    ~MetricsWatch() { stop(); }
    void stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopped_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

private:
    void watch() {
        try {
            HttpClient client(target_);
            std::unique_lock<std::mutex> lock(mutex_);
            while (!stopped_) {
                lock.unlock();
                const ServerMetrics m = read_server_metrics(parse_prometheus_text(client.get("/metrics")));
                lock.lock();
                ++level_.server_pages;
                raise_to(level_.server_running_max, m[ServerQuantity::RequestsRunning]);
                raise_to(level_.server_waiting_max, m[ServerQuantity::RequestsWaiting]);
                raise_to(level_.server_kv_usage_max, m[ServerQuantity::KvCacheUsage]);
                wake_.wait_for(lock, interval_, [this] { return stopped_; });
            }
        } catch (const std::exception&) {
            // No /metrics (or not one that parses): the level goes on without the server's view.
        }
    }

    RemoteTarget target_;
    std::chrono::duration<double, std::milli> interval_;
    ConcurrencyLevel& level_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopped_ = false;
    std::thread thread_;
};

ConcurrencyLevel run_level(const RemoteTarget& target, const CompletionRequest& request, int streams,
                           const SweepOptions& options) {
    ConcurrencyLevel level;
    level.streams = streams;
    level.timings.resize(static_cast<size_t>(streams));
    std::vector<std::exception_ptr> failures(static_cast<size_t>(streams));
    const Clock::time_point start = Clock::now();
    MetricsWatch watch(target, options.metrics_interval_ms, level);
    std::vector<std::thread> threads;
    for (int i = 0; i < streams; ++i) {
        threads.emplace_back([&, i] {
            try {
                HttpClient client(target);
                level.timings[static_cast<size_t>(i)] = stream_completion(client, request);
            } catch (...) {
                failures[static_cast<size_t>(i)] = std::current_exception();
            }
        });
    }
    for (std::thread& t : threads) t.join();
    watch.stop();
    for (const std::exception_ptr& f : failures) {
        if (f) std::rethrow_exception(f);
    }
    level.wall_ms = ms_since(start);
    std::vector<double> ttft, gaps;
    for (const StreamTiming& t : level.timings) {
        level.tokens += t.completion_tokens;
        ttft.push_back(t.ttft_ms);
        const std::vector<double> g = t.inter_token_ms();
        gaps.insert(gaps.end(), g.begin(), g.end());
    }
    level.tokens_per_s = level.wall_ms > 0 ? level.tokens / (level.wall_ms / 1e3) : 0;
    level.ttft_ms_median = nearest_rank_percentile(ttft, 50);
    level.itl_ms_median = nearest_rank_percentile(gaps, 50);
    level.itl_ms_p90 = nearest_rank_percentile(gaps, 90);
    return level;
}

}  // namespace

std::vector<double> StreamTiming::inter_token_ms() const {
    std::vector<double> gaps;
    for (size_t i = 1; i < arrivals_ms.size(); ++i) gaps.push_back(arrivals_ms[i] - arrivals_ms[i - 1]);
    return gaps;
}

StreamTiming stream_completion(HttpClient& client, const CompletionRequest& request) {
    if (request.max_tokens < 1) throw InvalidArgument("a streamed completion needs at least one token");
    StreamTiming t;
    const Clock::time_point start = Clock::now();
    client.post_event_stream(request.chat ? "/v1/chat/completions" : "/v1/completions", request_body(request).dump(),
                             [&](const ServerSentEvent& e) { return take_chunk(e.data, request.chat, start, t); });
    t.total_ms = ms_since(start);
    if (!t.usage_reported) t.completion_tokens = static_cast<int>(t.arrivals_ms.size());
    return t;
}

std::vector<ConcurrencyLevel> sweep_concurrency(const RemoteTarget& target, const CompletionRequest& request,
                                                const std::vector<int>& levels, const Progress& progress,
                                                const SweepOptions& options) {
    for (const int n : levels) {
        if (n < 1 || n > 256) throw InvalidArgument("a concurrency level must be from 1 to 256, not " + std::to_string(n));
    }
    CompletionRequest named = request;
    if (named.model.empty()) {
        HttpClient client(target);
        named.model = first_served_model(client);
    }
    std::vector<ConcurrencyLevel> out;
    for (size_t i = 0; i < levels.size() && !progress.cancelled(); ++i) {
        out.push_back(run_level(target, named, levels[i], options));
        progress.report("streams", static_cast<int64_t>(i + 1), static_cast<int64_t>(levels.size()),
                        std::to_string(levels[i]) + " at once");
    }
    return out;
}

}  // namespace inferscope::remote
