#pragma once
// Per-token timing of a real serving engine through its OpenAI-compatible streaming API: each
// request's time to first token and the arrival of every streamed piece, and a concurrency
// sweep (1, 2, 4, ... streams of the same prompt at once) giving aggregate tokens/s against
// the inter-token latency each request sees, the batching trade-off measured on the server.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/progress.h"
#include "engine/remote/http_client.h"

namespace inferscope::remote {

struct CompletionRequest {
    std::string model;   // empty: the first model /v1/models lists
    std::string prompt;  // the user message with `chat`
    int max_tokens = 64;
    bool chat = false;   // /v1/chat/completions instead of /v1/completions
    std::vector<int32_t> prompt_token_ids;  // not empty: the prompt as token ids (/v1/completions only)
    bool ignore_eos = false;  // ask for all max_tokens ("ignore_eos": vLLM, SGLang, llama-server)
    // > 0: ask for each token's top log-probabilities ("logprobs": k; chat: "logprobs": true, "top_logprobs": k).
    int top_logprobs = 0;
};

// A token's top log-probabilities as a server sends them: pieces and values, descending.
using TopLogprobs = std::vector<std::pair<std::string, double>>;

struct StreamTiming {
    double ttft_ms = 0;                // request sent -> first piece of text
    std::vector<double> arrivals_ms;   // each piece of text, from the request
    int completion_tokens = 0;         // the usage block's count, else the pieces counted
    bool usage_reported = false;       // the server sent a usage block
    std::string finish_reason;
    std::string text;
    std::vector<TopLogprobs> top_logprobs;  // per generated token, when asked for and sent
    double total_ms = 0;
    std::vector<double> inter_token_ms() const;  // gaps between consecutive pieces
};

// One streamed completion, timed. Throws RemoteError for an HTTP error, a broken stream or a
// chunk that is not a completion chunk (the message quotes it).
StreamTiming stream_completion(HttpClient& client, const CompletionRequest& request);

struct ConcurrencyLevel {
    int streams = 0;
    double wall_ms = 0;             // first request sent -> last stream ended
    int tokens = 0;                 // completion tokens of all streams
    double tokens_per_s = 0;        // tokens / wall time
    double ttft_ms_median = 0;
    double itl_ms_median = 0;       // over every gap of every stream
    double itl_ms_p90 = 0;
    std::vector<StreamTiming> timings;
    // What the server's /metrics reported while the level ran (its own view of the batch):
    // pages read, and the most running and waiting requests and the highest KV-cache usage
    // (0..1) any page showed; empty where the server exports no such quantity.
    int server_pages = 0;
    std::optional<double> server_running_max;
    std::optional<double> server_waiting_max;
    std::optional<double> server_kv_usage_max;
};

struct SweepOptions {
    // How often each level reads the server's /metrics while its streams run; 0: never. A
    // server without /metrics (an HTTP error, a page that does not parse) is read no further.
    double metrics_interval_ms = 250;
};

// Runs each concurrency level in turn, its streams on threads of their own (a client each);
// reports after each level and returns the levels done once `progress` is cancelled.
std::vector<ConcurrencyLevel> sweep_concurrency(const RemoteTarget& target, const CompletionRequest& request,
                                                const std::vector<int>& levels, const Progress& progress = {},
                                                const SweepOptions& options = {});

}  // namespace inferscope::remote
