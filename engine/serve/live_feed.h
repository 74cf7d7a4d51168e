#pragma once
// Between the HTTP threads and the engine thread of `serve`: requests submitted and cancelled
// by the HTTP threads, taken by the scheduler (a RequestFeed), and each request's channel,
// into which the engine thread puts text as tokens are sampled and the end when it comes.
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/serve/openai_protocol.h"
#include "engine/serve/serve_metrics.h"
#include "engine/tokenizer/utf8_stream.h"

namespace inferscope {
class Tokenizer;
}

namespace inferscope::server {

// One request's output as the engine produces it; the HTTP thread waits on `changed`.
struct RequestChannel {
    std::mutex mutex;
    std::condition_variable changed;
    std::string text;                        // produced, not yet taken
    std::vector<TokenLogprobText> logprobs;  // of the tokens produced, not yet taken (when asked for)
    int completion_tokens = 0;
    int cached_prompt_tokens = 0;  // known from the first token on
    bool finished = false;
    std::string finish_reason;  // "length", "stop", "abort", "error"
    std::string error;          // what failed, with "error"

    // Engine thread only.
    Utf8Stream utf8;
    double last_token_s = -1;
    int64_t piece_bytes = 0;  // bytes of the pieces so far (the next token's text offset)
};

class LiveFeed final : public RequestFeed {
public:
    LiveFeed(const Tokenizer& tokenizer, ServeMetrics& metrics);

    // Queues `request` (its id assigned here) with its channel; false once closed.
    bool submit(ServingRequest request, const std::shared_ptr<RequestChannel>& channel, int& id);
    void cancel(int id);
    // Every request still in flight ends ("abort") and nothing more is taken.
    void close();
    int in_flight() const;
    // After the scheduler has returned: ends every request it did not (taken after it closed,
    // or all of them when it failed) with `reason` ("abort", "error") and `error`.
    void end_remaining(const std::string& reason, const std::string& error);

    double now_s() const override;
    void take(std::vector<ServingRequest>& submitted, std::vector<int>& cancelled) override;
    void wait() override;
    bool closed() const override;
    void on_token(const RequestMetrics& request, TokenId token, const TokenLogprobs* logprobs) override;
    void on_finished(const RequestMetrics& request) override;

private:
    std::shared_ptr<RequestChannel> channel_of(int id) const;
    TokenLogprobText logprob_text(const TokenLogprobs& logprobs, const std::string& piece, int64_t text_offset) const;

    const Tokenizer& tokenizer_;
    ServeMetrics& metrics_;
    const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::vector<ServingRequest> submitted_;
    std::vector<int> cancelled_;
    bool closed_ = false;
    int next_id_ = 1;
    std::map<int, std::shared_ptr<RequestChannel>> channels_;  // submitted, not finished
};

}  // namespace inferscope::server
