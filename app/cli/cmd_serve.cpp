// `serve`: the engine behind an OpenAI-compatible HTTP API (engine/serve/completion_server.h),
// until SIGINT or SIGTERM.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/chat/conversation.h"
#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"
#include "engine/serve/completion_server.h"

namespace inferscope::cli {
namespace {

struct ServeCliOptions {
    ModelOptions model;
    std::string host = "127.0.0.1";
    int port = 8080;
    int slots = 8;
    int max_concurrency = 64;
    size_t max_body_bytes = size_t{1} << 20;
    std::string served_name;
    std::string api_key_env;
    bool no_prefix_caching = false;
};

// The name requests use: --served-model-name, else the file's stem (the built-in model's label).
std::string served_model_name(const ServeCliOptions& o) {
    if (!o.served_name.empty()) return o.served_name;
    if (o.model.model_path.empty()) return "stories260K";
    return std::filesystem::path(o.model.model_path).stem().string();
}

// The write end of StopOnSignal's pipe, for the signal handler (which may run on any thread).
int stop_pipe_write_end = -1;

extern "C" void write_stop_byte(int) {
    const char byte = 1;
    [[maybe_unused]] const ssize_t written = write(stop_pipe_write_end, &byte, 1);
}

// SIGINT and SIGTERM stop the server: the handler writes a byte into a pipe, which a thread
// of this object's waits on (only async-signal-safe work happens inside the handler).
class StopOnSignal {
public:
    explicit StopOnSignal(server::CompletionServer& server) {
        if (pipe(pipe_) != 0) throw Error("serve: cannot create the signal pipe");
        stop_pipe_write_end = pipe_[1];
        struct sigaction action {};
        action.sa_handler = &write_stop_byte;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, &old_int_);
        sigaction(SIGTERM, &action, &old_term_);
        watcher_ = std::thread([this, &server] {
            char byte = 0;
            while (read(pipe_[0], &byte, 1) < 0 && errno == EINTR) {
            }
            if (byte == 1) std::fprintf(stderr, "serve: stopping\n");
            server.stop();
        });
    }
    ~StopOnSignal() {
        sigaction(SIGINT, &old_int_, nullptr);
        sigaction(SIGTERM, &old_term_, nullptr);
        const char wake = 2;  // the server stopped otherwise: the watcher need not wait
        [[maybe_unused]] const ssize_t written = write(pipe_[1], &wake, 1);
        watcher_.join();
        stop_pipe_write_end = -1;
        close(pipe_[0]);
        close(pipe_[1]);
    }
    StopOnSignal(const StopOnSignal&) = delete;
    StopOnSignal& operator=(const StopOnSignal&) = delete;

private:
    int pipe_[2] = {-1, -1};
    struct sigaction old_int_ {};
    struct sigaction old_term_ {};
    std::thread watcher_;
};

void run_serve(const ServeCliOptions& o) {
    const auto model = load_model(o.model);
    SessionOptions so = session_options(o.model);
    so.max_sequences = o.slots;
    InferenceSession session(model, so, make_backend(o.model, model, /*op_timestamps=*/false));
    warm_up(session);
    server::ServeOptions options;
    options.host = o.host;
    options.port = o.port;
    options.model_name = served_model_name(o);
    options.max_concurrent_requests = o.max_concurrency;
    options.max_body_bytes = o.max_body_bytes;
    options.scheduler.slots = o.slots;
    options.scheduler.prefix_caching = !o.no_prefix_caching;
    if (!o.api_key_env.empty()) options.api_key = api_key_from_env(o.api_key_env);
    options.chat_template = chat::model_chat_template(model->file());
    server::CompletionServer server(session, options);
    const int port = server.bind();
    if (o.host != "127.0.0.1" && o.host != "localhost" && o.host != "::1") {
        std::fprintf(stderr, "serve: listening on %s: anyone who can reach this machine can use the model\n", o.host.c_str());
    }
    std::fprintf(stderr, "serve: %s on http://%s:%d (%d slots, context %d tokens each, %s, prefix caching %s%s)%s\n",
                 options.model_name.c_str(), o.host.c_str(), port, o.slots, session.context_size(),
                 session.backend().name().c_str(), o.no_prefix_caching ? "off" : "on",
                 options.api_key ? ", API key required" : "",
                 options.chat_template ? "" : "; no chat template: /v1/completions only");
    StopOnSignal stop_on_signal(server);
    server.run();
}

}  // namespace

void add_serve_command(CLI::App& app) {
    auto o = std::make_shared<ServeCliOptions>();
    CLI::App* cmd =
        app.add_subcommand("serve", "serve the model over an OpenAI-compatible HTTP API (completions, chat, /metrics)");
    add_model_options(*cmd, o->model, true);
    cmd->add_option("--host", o->host, "address to listen on (127.0.0.1: this machine only)")->capture_default_str();
    cmd->add_option("--port", o->port, "port to listen on (0: any free one)")->check(CLI::Range(0, 65535))->capture_default_str();
    cmd->add_option("--slots", o->slots, "sequences decoded together (continuous batching)")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("--max-concurrency", o->max_concurrency, "generation requests at once; more get HTTP 503")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("--max-body-bytes", o->max_body_bytes, "largest request body; larger get HTTP 413")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("--served-model-name", o->served_name, "the model's name in the API (default: the file's stem)");
    cmd->add_option("--api-key-env", o->api_key_env,
                    "an environment variable holding the key /v1/ requests must send (Authorization: Bearer <key>)");
    cmd->add_flag("--no-prefix-caching", o->no_prefix_caching,
                  "compute every prompt in full (by default a prompt starts from cached blocks of an earlier one's prefix)");
    cmd->callback([o] { run_serve(*o); });
}

}  // namespace inferscope::cli
