#include "engine/remote/stream_bench.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/remote/served_model.h"

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
    } else {
        body["prompt"] = r.prompt;
    }
    return body;
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
    }
    return true;
}

ConcurrencyLevel run_level(const RemoteTarget& target, const CompletionRequest& request, int streams) {
    ConcurrencyLevel level;
    level.streams = streams;
    level.timings.resize(static_cast<size_t>(streams));
    std::vector<std::exception_ptr> failures(static_cast<size_t>(streams));
    const Clock::time_point start = Clock::now();
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
                                                const std::vector<int>& levels, const Progress& progress) {
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
        out.push_back(run_level(target, named, levels[i]));
        progress.report("streams", static_cast<int64_t>(i + 1), static_cast<int64_t>(levels.size()),
                        std::to_string(levels[i]) + " at once");
    }
    return out;
}

}  // namespace inferscope::remote
