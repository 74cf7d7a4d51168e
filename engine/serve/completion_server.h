#pragma once
// `inferscope-cli serve`: the engine behind an OpenAI-compatible HTTP API (cpp-httplib), on
// the continuous-batching scheduler (serve_live) and the session's paged KV cache:
//   POST /v1/completions, /v1/chat/completions  (streamed as server-sent events or whole)
//   GET  /v1/models (with max_model_len), /health, /metrics (vLLM's metric names)
// Threads: HTTP requests on a pool of their own, each waiting on its request's channel; one
// engine thread runs every step and hands each token to its channel as it is sampled.
// Limits: a body size (413), a number of generation requests at once (503 beyond it), a
// context per request (400 when prompt plus max_tokens exceed it), an API key when given (401).
// Binds 127.0.0.1 unless told.
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/runtime/scheduler.h"

namespace inferscope {
class InferenceSession;
}

namespace inferscope::server {

struct ServeOptions {
    std::string host = "127.0.0.1";
    int port = 8080;         // 0: a free port (port() says which)
    std::string model_name;  // what /v1/models lists and requests may name
    int max_concurrent_requests = 64;
    size_t max_body_bytes = size_t{1} << 20;
    SchedulerOptions scheduler;                // slots: at most the session's max_sequences
    std::optional<std::string> chat_template;  // the model's; without one, chat requests get 400
    std::optional<std::string> api_key;        // when set, /v1/... requests without it get 401
    // Called on the engine thread after every step, once its tokens are in their channels
    // (what a step observer would show; the tests pace the engine with it).
    std::function<void(const SchedulerStep&)> after_step;
};

class CompletionServer {
public:
    // The session must outlive the server and be used by nothing else while it runs.
    CompletionServer(InferenceSession& session, ServeOptions options);
    ~CompletionServer();
    CompletionServer(const CompletionServer&) = delete;
    CompletionServer& operator=(const CompletionServer&) = delete;

    // Binds host:port; Error naming the address when it cannot. Returns the port bound.
    int bind();
    int port() const;
    // Serves until stop(); blocks. Requests in flight then end (finish reason "abort"). Where
    // the engine stops on an error instead (a lost device), the server stops too, its requests
    // end with that error, and run() throws it once the listener has stopped.
    void run();
    // From any thread, once or more; run() returns soon after.
    void stop();

private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace inferscope::server
