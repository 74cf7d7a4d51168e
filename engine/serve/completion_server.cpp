#include "engine/serve/completion_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include "engine/chat/chat_template.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "engine/serve/live_feed.h"
#include "engine/serve/openai_protocol.h"

namespace inferscope::server {
namespace {

// A generation request counted against the concurrency limit while it lives (a streamed one
// as long as its response's content provider).
class ActiveRequest {
public:
    // Null when `limit` requests are already active.
    static std::shared_ptr<ActiveRequest> enter(std::atomic<int>& active, int limit) {
        if (active.fetch_add(1) >= limit) {
            --active;
            return nullptr;
        }
        return std::shared_ptr<ActiveRequest>(new ActiveRequest(active));
    }
    ~ActiveRequest() { --active_; }
    ActiveRequest(const ActiveRequest&) = delete;
    ActiveRequest& operator=(const ActiveRequest&) = delete;

private:
    explicit ActiveRequest(std::atomic<int>& active) : active_(active) {}
    std::atomic<int>& active_;
};

// Connections the kernel holds for the listener to accept. A burst beyond the queue (a
// concurrency sweep opening 64 streams at once) has connections dropped or reset.
constexpr int kListenBacklog = 1024;

// Address reuse lets a restarted server bind while old connections linger in TIME_WAIT;
// unlike httplib's default (port reuse), a second server on a bound port is refused.
socket_t prepare_listening_socket(socket_t sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    return sock;
}

void reply_error(httplib::Response& res, int status, const std::string& message) {
    res.status = status;
    res.set_content(error_body(status, message), "application/json");
}

int64_t unix_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What a streamed response still has to send, and what it is waiting for.
struct StreamState {
    std::shared_ptr<RequestChannel> channel;
    std::shared_ptr<ActiveRequest> active;
    CompletionPiece piece;
    int prompt_tokens = 0;
    bool include_usage = false;
    bool ended = false;
};

bool write_event(httplib::DataSink& sink, const std::string& data) {
    const std::string event = "data: " + data + "\n\n";
    return sink.write(event.data(), event.size());
}

// One turn of a streamed response: waits a little for text or the end, sends what came.
bool stream_some(StreamState& s, httplib::DataSink& sink) {
    std::string text;
    std::vector<TokenLogprobText> logprobs;
    bool finished = false;
    std::string reason, error;
    Usage usage;
    usage.prompt_tokens = s.prompt_tokens;
    {
        std::unique_lock lock(s.channel->mutex);
        s.channel->changed.wait_for(lock, std::chrono::milliseconds(200), [&] {
            return !s.channel->text.empty() || !s.channel->logprobs.empty() || s.channel->finished;
        });
        std::swap(text, s.channel->text);
        std::swap(logprobs, s.channel->logprobs);
        finished = s.channel->finished;
        reason = s.channel->finish_reason;
        error = s.channel->error;
        usage.completion_tokens = s.channel->completion_tokens;
        usage.cached_prompt_tokens = s.channel->cached_prompt_tokens;
    }
    // A token whose piece ends inside a UTF-8 character still sends its log-probabilities.
    if ((!text.empty() || !logprobs.empty()) && !write_event(sink, stream_chunk(s.piece, text, "", logprobs))) return false;
    if (!finished) return true;
    s.ended = true;
    if (reason == "error") {
        if (!write_event(sink, error_body(500, error))) return false;
    } else {
        if (!write_event(sink, stream_chunk(s.piece, "", reason))) return false;
        if (s.include_usage && !write_event(sink, usage_chunk(s.piece, usage))) return false;
    }
    if (!write_event(sink, "[DONE]")) return false;
    sink.done();
    return true;
}

}  // namespace

class CompletionServer::Impl {
public:
    Impl(InferenceSession& session, ServeOptions options)
        : session_(session),
          options_(std::move(options)),
          metrics_(options_.model_name, options_.scheduler.prefix_caching),
          feed_(session.model().tokenizer(), metrics_) {
        try {
            if (options_.chat_template) chat_template_.emplace(*options_.chat_template);
        } catch (const Error& e) {
            chat_template_problem_ =
                std::string("the model's chat template cannot be used (") + e.what() + "); use /v1/completions";
        }
        server_.new_task_queue = [n = options_.max_concurrent_requests + 16] {
            return new httplib::ThreadPool(static_cast<size_t>(n));
        };
        server_.set_payload_max_length(options_.max_body_bytes);
        server_.set_socket_options([this](socket_t sock) { listening_socket_ = prepare_listening_socket(sock); });
        install_routes();
    }

    int bind();
    void run();
    void stop() {
        {
            std::lock_guard lock(stop_mutex_);
            stop_requested_ = true;
        }
        stop_changed_.notify_all();
        feed_.close();
    }
    int port_ = 0;

private:
    void install_routes();
    void handle_generation(const httplib::Request& req, httplib::Response& res, bool chat);
    std::vector<TokenId> prompt_tokens(const ApiRequest& request);
    ServingRequest serving_request(const ApiRequest& request, std::vector<TokenId> prompt) const;
    void reply_whole(httplib::Response& res, const CompletionPiece& piece, RequestChannel& channel, int prompt_tokens);
    void run_engine();
    void stop_listener(std::thread& listener);

    InferenceSession& session_;
    ServeOptions options_;
    ServeMetrics metrics_;
    LiveFeed feed_;
    std::optional<chat::ChatTemplate> chat_template_;
    std::string chat_template_problem_ = "the model file has no chat template; use /v1/completions";
    std::mutex template_mutex_;
    std::atomic<int> active_{0};
    std::mutex stop_mutex_;
    std::condition_variable stop_changed_;
    bool stop_requested_ = false;
    bool listener_returned_ = false;
    std::exception_ptr engine_failure_;  // what stopped the engine, rethrown by run()
    socket_t listening_socket_ = -1;
    httplib::Server server_;
};

int CompletionServer::Impl::bind() {
    port_ = options_.port == 0 ? server_.bind_to_any_port(options_.host)
                               : (server_.bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port_ <= 0) {
        throw Error("cannot listen on " + options_.host + ":" + std::to_string(options_.port) +
                    " (in use, or not an address of this machine)");
    }
    // httplib listens with a backlog of 5; listening again on the bound socket raises it.
    if (::listen(listening_socket_, kListenBacklog) != 0) {
        throw Error("cannot queue connections on " + options_.host + ":" + std::to_string(port_) + ": " + std::strerror(errno));
    }
    return port_;
}

// Compares every byte, so that the time taken does not tell how much of a guess was right
// (the length is not the secret).
static bool same_secret(const std::string& given, const std::string& key) {
    if (given.size() != key.size()) return false;
    unsigned char difference = 0;
    for (size_t i = 0; i < key.size(); ++i) difference |= static_cast<unsigned char>(given[i] ^ key[i]);
    return difference == 0;
}

void CompletionServer::Impl::install_routes() {
    // With a key, the API (/v1/...) wants "Authorization: Bearer <key>"; /health and /metrics stay open, as in vLLM.
    if (options_.api_key) {
        server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
            if (req.path.rfind("/v1/", 0) != 0) return httplib::Server::HandlerResponse::Unhandled;
            const std::string given = req.get_header_value("Authorization");
            const std::string prefix = "Bearer ";
            if (given.rfind(prefix, 0) == 0 && same_secret(given.substr(prefix.size()), *options_.api_key)) {
                return httplib::Server::HandlerResponse::Unhandled;
            }
            res.set_header("WWW-Authenticate", "Bearer");
            reply_error(res, 401,
                        given.empty() ? "this server wants an API key (Authorization: Bearer <key>)"
                                      : "the API key is not this server's");
            return httplib::Server::HandlerResponse::Handled;
        });
    }
    server_.Get("/health", [](const httplib::Request&, httplib::Response& res) { res.set_content("", "text/plain"); });
    server_.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
        const nlohmann::ordered_json model = {{"id", options_.model_name},
                                              {"object", "model"},
                                              {"created", unix_seconds()},
                                              {"owned_by", "inferscope"},
                                              {"max_model_len", session_.context_size()}};
        res.set_content(dump_json({{"object", "list"}, {"data", nlohmann::ordered_json::array({model})}}), "application/json");
    });
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
        const int in_flight = feed_.in_flight();
        const int running = std::min(in_flight, options_.scheduler.slots);
        res.set_content(metrics_.page(running, in_flight - running), "text/plain; version=0.0.4");
    });
    server_.Post("/v1/completions",
                 [this](const httplib::Request& req, httplib::Response& res) { handle_generation(req, res, false); });
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request& req, httplib::Response& res) { handle_generation(req, res, true); });
}

std::vector<TokenId> CompletionServer::Impl::prompt_tokens(const ApiRequest& request) {
    const Tokenizer& tokenizer = session_.model().tokenizer();
    if (request.chat) {
        if (!chat_template_) throw ApiError(400, chat_template_problem_);
        std::lock_guard lock(template_mutex_);
        try {
            return chat::render_conversation(*chat_template_, tokenizer, request.messages, true).ids;
        } catch (const Error& e) {
            throw ApiError(400, std::string("the chat template refused the messages: ") + e.what());
        }
    }
    if (request.prompt_ids.empty()) return tokenizer.encode(request.prompt, /*add_special=*/true, /*parse_special=*/true);
    for (const int32_t id : request.prompt_ids) {
        if (id < 0 || id >= tokenizer.vocab_size()) {
            throw ApiError(400, "token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                    std::to_string(tokenizer.vocab_size() - 1) + ")");
        }
    }
    return {request.prompt_ids.begin(), request.prompt_ids.end()};
}

ServingRequest CompletionServer::Impl::serving_request(const ApiRequest& request, std::vector<TokenId> prompt) const {
    const int context = session_.context_size();
    const int prompt_count = static_cast<int>(prompt.size());
    if (prompt_count == 0) throw ApiError(400, "the prompt has no tokens");
    if (prompt_count >= context) {
        throw ApiError(400, "the prompt is " + std::to_string(prompt_count) + " tokens; the context holds " +
                                std::to_string(context) + " (prompt and completion together)");
    }
    const int max_tokens = request.max_tokens.value_or(request.chat ? context - prompt_count : 16);
    if (max_tokens > context - prompt_count) {
        throw ApiError(400, "max_tokens " + std::to_string(max_tokens) + " plus the prompt's " + std::to_string(prompt_count) +
                                " tokens exceed the context of " + std::to_string(context) + " tokens");
    }
    ServingRequest r;
    r.prompt = std::move(prompt);
    r.max_new_tokens = max_tokens;
    r.stop_at_end_of_generation = !request.ignore_eos;
    r.sampling = request.sampling;
    r.logprobs = request.logprobs;
    return r;
}

void CompletionServer::Impl::handle_generation(const httplib::Request& req, httplib::Response& res, bool chat) {
    const std::shared_ptr<ActiveRequest> active = ActiveRequest::enter(active_, options_.max_concurrent_requests);
    if (active == nullptr) {
        res.set_header("Retry-After", "1");
        return reply_error(
            res, 503, "the server is at its limit of " + std::to_string(options_.max_concurrent_requests) + " requests at once");
    }
    try {
        const ApiRequest request = parse_api_request(req.body, chat);
        if (!request.model.empty() && request.model != options_.model_name) {
            return reply_error(
                res, 404,
                "the model \"" + request.model + "\" is not served here (this server serves \"" + options_.model_name + "\")");
        }
        ServingRequest serving = serving_request(request, prompt_tokens(request));
        const int prompt_count = static_cast<int>(serving.prompt.size());
        auto channel = std::make_shared<RequestChannel>();
        int id = 0;
        if (!feed_.submit(std::move(serving), channel, id)) return reply_error(res, 503, "the server is shutting down");
        const CompletionPiece piece{(chat ? "chatcmpl-" : "cmpl-") + std::to_string(id),
                                    unix_seconds(),
                                    options_.model_name,
                                    chat,
                                    request.logprobs >= 0,
                                    options_.scheduler.prefix_caching};
        if (!request.stream) return reply_whole(res, piece, *channel, prompt_count);
        auto state =
            std::make_shared<StreamState>(StreamState{channel, active, piece, prompt_count, request.include_usage, false});
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream", [state](size_t, httplib::DataSink& sink) { return stream_some(*state, sink); },
            [this, state, id](bool) {
                if (!state->ended) feed_.cancel(id);  // the client left, or the server is stopping
            });
    } catch (const ApiError& e) {
        reply_error(res, e.status(), e.what());
    } catch (const std::exception& e) {
        reply_error(res, 500, e.what());
    }
}

void CompletionServer::Impl::reply_whole(httplib::Response& res, const CompletionPiece& piece, RequestChannel& channel,
                                         int prompt_tokens) {
    std::unique_lock lock(channel.mutex);
    channel.changed.wait(lock, [&] { return channel.finished; });
    if (channel.finish_reason == "error") return reply_error(res, 500, channel.error);
    const Usage usage{prompt_tokens, channel.completion_tokens, channel.cached_prompt_tokens};
    res.set_content(completion_body(piece, channel.text, channel.finish_reason, usage, channel.logprobs), "application/json");
}

void CompletionServer::Impl::run_engine() {
    const auto executor = make_engine_executor(session_, SamplingParams{});
    const auto on_step = [this](const SchedulerStep& step, ServingControl&) {
        const uint64_t pool = session_.kv_cache().layout().pool_bytes();
        metrics_.set_kv_cache_usage(
            pool > 0 ? static_cast<double>(session_.kv_cache().bytes_reserved()) / static_cast<double>(pool) : 0.0);
        if (options_.after_step) options_.after_step(step);
    };
    try {
        serve_live(feed_, options_.scheduler, *executor, on_step);
        feed_.end_remaining("abort", "");
    } catch (const std::exception& e) {
        feed_.end_remaining("error", std::string("the engine stopped: ") + e.what());
        engine_failure_ = std::current_exception();
        stop();
    }
}

// httplib's stop() acts only on a server already listening, and only once: the listener
// may not have started when stop() is asked for.
void CompletionServer::Impl::stop_listener(std::thread& listener) {
    bool stopped = false;
    for (;;) {
        {
            std::lock_guard lock(stop_mutex_);
            if (listener_returned_) break;
        }
        if (!stopped && server_.is_running()) {
            server_.stop();
            stopped = true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    listener.join();
}

void CompletionServer::Impl::run() {
    if (port_ <= 0) bind();
    std::thread engine([this] { run_engine(); });
    std::thread listener([this] {
        server_.listen_after_bind();
        {
            std::lock_guard lock(stop_mutex_);
            listener_returned_ = true;
        }
        stop_changed_.notify_all();
    });
    {
        std::unique_lock lock(stop_mutex_);
        stop_changed_.wait(lock, [&] { return stop_requested_ || listener_returned_; });
    }
    feed_.close();  // requests in flight end, so that the listener's threads can return
    stop_listener(listener);
    engine.join();
    if (engine_failure_) std::rethrow_exception(engine_failure_);
}

CompletionServer::CompletionServer(InferenceSession& session, ServeOptions options)
    : impl_(std::make_unique<Impl>(session, std::move(options))) {}
CompletionServer::~CompletionServer() { stop(); }
int CompletionServer::bind() { return impl_->bind(); }
int CompletionServer::port() const { return impl_->port_; }
void CompletionServer::run() { impl_->run(); }
void CompletionServer::stop() { impl_->stop(); }

}  // namespace inferscope::server
