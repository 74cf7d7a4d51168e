// `remote-bench`: a serving engine's streamed completions timed token by token, at each
// concurrency level: aggregate tokens/s against the inter-token latency a request sees.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/remote/served_model.h"
#include "engine/remote/stream_bench.h"

namespace inferscope::cli {
namespace {

struct RemoteBenchOptions {
    std::string url;
    std::string api_key_env;
    double timeout_s = 60;
    remote::CompletionRequest request;
    std::vector<int> concurrency{1};
    remote::SweepOptions sweep;
    bool json = false;
};

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

// A server-reported maximum for the table: "-" where the server's /metrics has no such quantity.
std::string optional_cell(const std::optional<double>& v, const char* format) {
    if (!v) return "-";
    char text[32];
    std::snprintf(text, sizeof text, format, *v);
    return text;
}

nlohmann::json level_json(const remote::ConcurrencyLevel& l) {
    nlohmann::json streams = nlohmann::json::array();
    for (const remote::StreamTiming& t : l.timings) {
        streams.push_back({{"ttft_ms", t.ttft_ms},
                           {"total_ms", t.total_ms},
                           {"completion_tokens", t.completion_tokens},
                           {"usage_reported", t.usage_reported},
                           {"finish_reason", t.finish_reason},
                           {"arrivals_ms", t.arrivals_ms}});
    }
    return {{"concurrency", l.streams},
            {"wall_ms", l.wall_ms},
            {"tokens", l.tokens},
            {"tokens_per_s", l.tokens_per_s},
            {"ttft_ms_median", l.ttft_ms_median},
            {"itl_ms_median", l.itl_ms_median},
            {"itl_ms_p90", l.itl_ms_p90},
            {"server",
             {{"metrics_pages", l.server_pages},
              {"running_max", optional_json(l.server_running_max)},
              {"waiting_max", optional_json(l.server_waiting_max)},
              {"kv_usage_max", optional_json(l.server_kv_usage_max)}}},
            {"streams", streams}};
}

void run_remote_bench(RemoteBenchOptions o) {
    const remote::RemoteTarget target{o.url, api_key_from_env(o.api_key_env), o.timeout_s};
    remote::HttpClient client(target);
    const remote::ServedModel served = remote::describe_served_model(client);
    if (o.request.model.empty()) o.request.model = served.id;
    const auto levels = remote::sweep_concurrency(target, o.request, o.concurrency, stderr_progress("remote-bench"), o.sweep);
    if (o.json) {
        nlohmann::json rows = nlohmann::json::array();
        for (const auto& l : levels) rows.push_back(level_json(l));
        print_json({{"url", o.url},
                    {"model", o.request.model},
                    {"context_tokens", served.context_tokens ? nlohmann::json(*served.context_tokens) : nlohmann::json(nullptr)},
                    {"context_source", served.context_source},
                    {"max_tokens", o.request.max_tokens},
                    {"chat", o.request.chat},
                    {"ignore_eos", o.request.ignore_eos},
                    {"levels", rows}});
        return;
    }
    std::printf("%s, model %s, %d tokens per request (remote)\n", o.url.c_str(), terminal_safe(o.request.model).c_str(),
                o.request.max_tokens);
    if (served.context_tokens) {
        std::printf("context: %lld tokens (%s)\n", static_cast<long long>(*served.context_tokens), served.context_source.c_str());
    } else {
        std::printf("context: not reported by this server\n");
    }
    std::printf("| streams | tokens | wall ms | tokens/s | TTFT ms (median) | ITL ms (median) | ITL ms (p90) "
                "| server running (max) | server KV usage (max) |\n");
    std::printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for (const auto& l : levels) {
        std::printf("| %d | %d | %.1f | %.2f | %.1f | %.2f | %.2f | %s | %s |\n", l.streams, l.tokens, l.wall_ms, l.tokens_per_s,
                    l.ttft_ms_median, l.itl_ms_median, l.itl_ms_p90, optional_cell(l.server_running_max, "%.0f").c_str(),
                    optional_cell(l.server_kv_usage_max ? std::optional<double>(*l.server_kv_usage_max * 100) : std::nullopt,
                                  "%.1f %%")
                        .c_str());
    }
    if (o.sweep.metrics_interval_ms > 0 && !levels.empty() && levels.front().server_pages == 0) {
        std::printf("the server's /metrics could not be read: its columns are empty\n");
    }
}

}  // namespace

void add_remote_bench_command(CLI::App& app) {
    auto o = std::make_shared<RemoteBenchOptions>();
    CLI::App* cmd =
        app.add_subcommand("remote-bench", "A serving engine's streamed completions timed per token, at each concurrency");
    cmd->add_option("--url", o->url, "the server's base URL, http[s]://host:port")->required();
    cmd->add_option("--api-key-env", o->api_key_env, "an environment variable holding the API key (sent as a bearer token)");
    cmd->add_option("--model", o->request.model, "the model to ask for (default: the first /v1/models lists)");
    add_prompt_options(*cmd, o->request.prompt, "the prompt (the user message with --chat)", true);
    cmd->add_option("-n,--tokens", o->request.max_tokens, "tokens per request")->check(CLI::Range(1, 1 << 20));
    cmd->add_option("--concurrency", o->concurrency, "streams at once, one level after another")
        ->delimiter(',')
        ->check(CLI::Range(1, 256));
    cmd->add_flag("--chat", o->request.chat, "/v1/chat/completions instead of /v1/completions");
    cmd->add_flag("--ignore-eos", o->request.ignore_eos,
                  "ask for all -n tokens of every request (\"ignore_eos\": vLLM, SGLang, llama-server, serve)");
    cmd->add_option("--metrics-interval", o->sweep.metrics_interval_ms,
                    "ms between reads of the server's /metrics during each level (0: none)")
        ->check(CLI::Range(0.0, 60000.0));
    cmd->add_option("--timeout", o->timeout_s, "seconds to wait for the server")->check(CLI::PositiveNumber);
    cmd->add_flag("--json", o->json, "machine-readable JSON on stdout, every stream's token arrivals included");
    cmd->callback([o] { run_remote_bench(*o); });
}

}  // namespace inferscope::cli
