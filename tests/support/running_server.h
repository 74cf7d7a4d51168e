#pragma once
// `serve` on the built-in stories260K model at a free loopback port, serving on a thread of its
// own until destroyed: what the remote client and the app's Server tab are tested against.
#include <httplib.h>

#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "engine/backend/default_backend.h"
#include "engine/remote/http_client.h"
#include "engine/remote/prometheus.h"
#include "engine/remote/server_metrics.h"
#include "engine/runtime/session.h"
#include "engine/serve/completion_server.h"
#include "engine/synth/builtin_models.h"
#include "support/engine_helpers.h"

namespace inferscope::testing {

constexpr int kContextTokens = 512;

// A server on a free loopback port, serving until the test ends.
class RunningServer {
public:
    // `backend`: what the session runs on (null: the CPU backend).
    explicit RunningServer(server::ServeOptions options = {}, int slots = 4, const BackendFactory& backend = {}) {
        SessionOptions so = testing::test_session_options(KvDtype::F16, kContextTokens, 1);
        so.max_sequences = slots;
        std::shared_ptr<const Model> model = load_builtin_model();
        session_ = std::make_unique<InferenceSession>(model, so, backend ? backend(model) : nullptr);
        options.port = 0;
        options.model_name = "stories260K";
        options.scheduler.slots = slots;
        server_ = std::make_unique<server::CompletionServer>(*session_, options);
        port_ = server_->bind();
        thread_ = std::thread([this] {
            try {
                server_->run();
            } catch (const std::exception& e) {
                failure_ = e.what();
            }
        });
    }
    ~RunningServer() { wait_stopped(); }
    // Stops the server (where it still runs) and returns what run() threw, or "".
    std::string wait_stopped() {
        if (thread_.joinable()) {
            server_->stop();
            thread_.join();
        }
        return failure_;
    }
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    remote::RemoteTarget target() const {
        remote::RemoteTarget t;
        t.base_url = url();
        t.timeout_s = 20;
        return t;
    }
    httplib::Client client() const {
        httplib::Client c("127.0.0.1", port_);
        c.set_read_timeout(20, 0);
        return c;
    }
    remote::ServerMetrics metrics() const {
        remote::HttpClient http(target());
        return remote::read_server_metrics(remote::parse_prometheus_text(http.get("/metrics")));
    }

private:
    std::unique_ptr<InferenceSession> session_;
    std::unique_ptr<server::CompletionServer> server_;
    std::thread thread_;
    std::string failure_;
    int port_ = 0;
};

}  // namespace inferscope::testing
