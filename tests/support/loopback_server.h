#pragma once
// An HTTP server on 127.0.0.1 at a free port, on a thread of its own until destroyed, for the
// tests of the remote client: each test installs the handlers it needs before start(), and
// declares the server after whatever those handlers use, so that it stops first.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>

namespace inferscope::testing {

class LoopbackServer {
public:
    httplib::Server& server() { return server_; }

    // Binds a free port and serves until destruction; the base URL of the server.
    std::string start() {
        port_ = server_.bind_to_any_port("127.0.0.1");
        if (port_ <= 0) throw std::runtime_error("no free loopback port for the test server");
        thread_ = std::thread([this] { server_.listen_after_bind(); });
        for (int i = 0; i < 500 && !server_.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (!server_.is_running()) throw std::runtime_error("the loopback test server did not start");
        return url();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    ~LoopbackServer() {
        server_.stop();
        if (thread_.joinable()) thread_.join();
    }

private:
    httplib::Server server_;
    std::thread thread_;
    int port_ = 0;
};

// A loopback port with nothing listening on it: bound by the kernel's choice, then closed.
inline int closed_loopback_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::runtime_error("no loopback port for the test");
    }
    ::close(fd);
    return ntohs(address.sin_port);
}

// An OpenAI-compatible completion server in miniature: /v1/models names one model and
// /v1/completions and /v1/chat/completions stream max_tokens pieces ("t0 ", "t1 ", ...) a
// fixed pause apart, then a usage block and [DONE]. It records the most requests it held
// at once and the last request body. /props and /info answer only when given a page.
struct FakeCompletions {
    std::string models_page = R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})";
    std::string props_page;  // llama-server's
    std::string info_page;   // TGI's
    bool serve_metrics = false;  // /metrics in vLLM's names: running = streams in flight, KV usage 0.25 per stream
    // With serve_metrics: streams held until in_flight also wait (up to 10 s) for a /metrics read.
    bool hold_until_metrics_read = false;
    std::atomic<int> metrics_reads{0};
    std::atomic<int> metrics_reads_when_held{0};
    int pause_ms = 10;
    bool send_usage = true;
    std::atomic<int> hold_until_in_flight{0};  // > 0: each stream waits (up to 10 s) until this many are in flight
    std::atomic<int> in_flight{0};
    std::atomic<int> most_in_flight{0};
    std::mutex mutex;
    nlohmann::json last_body;

    void install(httplib::Server& server) {
        server.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
            res.set_content(models_page, "application/json");
        });
        if (serve_metrics) {
            server.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) { metrics(res); });
        }
        for (const auto& path_and_page : {std::pair{"/props", &props_page}, {"/info", &info_page}}) {
            const std::string* page = path_and_page.second;
            server.Get(path_and_page.first, [page](const httplib::Request&, httplib::Response& res) {
                if (page->empty()) {
                    res.status = 404;
                    return;
                }
                res.set_content(*page, "application/json");
            });
        }
        for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
            const bool chat = std::string(path) == "/v1/chat/completions";
            server.Post(path, [this, chat](const httplib::Request& req, httplib::Response& res) { stream(req, res, chat); });
        }
    }

private:
    void metrics(httplib::Response& res) {
        // Held streams cannot end before this page is counted, so a page that finds them all
        // held reports them all running.
        const bool all_held = hold_until_in_flight > 0 && most_in_flight.load() >= hold_until_in_flight;
        const int running = in_flight.load();
        ++metrics_reads;
        if (all_held) ++metrics_reads_when_held;
        res.set_content("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"fake-model\"} " +
                            std::to_string(running) +
                            "\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"fake-model\"} 0\n"
                            "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"fake-model\"} " +
                            std::to_string(0.25 * running) + "\n",
                        "text/plain; version=0.0.4");
    }

    void stream(const httplib::Request& req, httplib::Response& res, bool chat) {
        nlohmann::json body = nlohmann::json::parse(req.body);
        {
            std::lock_guard<std::mutex> lock(mutex);
            last_body = body;
        }
        const int tokens = body.value("max_tokens", 16);
        const int now = ++in_flight;
        for (int seen = most_in_flight.load(); now > seen && !most_in_flight.compare_exchange_weak(seen, now);) {
        }
        // Holding streams back makes "N at once" independent of how fast the clients start.
        for (int waited_ms = 0; most_in_flight.load() < hold_until_in_flight && waited_ms < 10000; ++waited_ms) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        for (int waited_ms = 0; hold_until_metrics_read && metrics_reads_when_held.load() == 0 && waited_ms < 10000; ++waited_ms) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        res.set_chunked_content_provider("text/event-stream", [this, tokens, chat](size_t, httplib::DataSink& sink) {
            for (int i = 0; i < tokens; ++i) {
                std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
                const std::string piece = 't' + std::to_string(i) + ' ';
                nlohmann::json choice = chat ? nlohmann::json{{"index", 0}, {"delta", {{"content", piece}}}}
                                             : nlohmann::json{{"index", 0}, {"text", piece}};
                choice["finish_reason"] = i + 1 == tokens ? nlohmann::json("length") : nlohmann::json(nullptr);
                const std::string event = "data: " + nlohmann::json{{"choices", {choice}}}.dump() + "\n\n";
                sink.write(event.data(), event.size());
            }
            if (send_usage) {
                const std::string usage =
                    "data: " +
                    nlohmann::json{{"choices", nlohmann::json::array()}, {"usage", {{"completion_tokens", tokens}}}}.dump() +
                    "\n\n";
                sink.write(usage.data(), usage.size());
            }
            // Out of flight before the client can read the end and start its next request.
            --in_flight;
            const std::string done = "data: [DONE]\n\n";
            sink.write(done.data(), done.size());
            sink.done();
            return true;
        });
    }
};

}  // namespace inferscope::testing
