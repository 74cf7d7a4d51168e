// `remote-replay`: a request trace (the serve-sim generator's) sent to a serving engine, each
// request at its arrival time, and the latencies the server gives them.
#include <cstdio>
#include <string>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/remote/trace_replay.h"

namespace inferscope::cli {
namespace {

struct RemoteReplayOptions {
    std::string url;
    std::string api_key_env;
    double timeout_s = 60;
    TraceCliOptions trace;
    remote::ReplayOptions replay;
    bool json = false;
};

nlohmann::json percentiles_json(double (remote::ReplayReport::*latency)(double) const, const remote::ReplayReport& r) {
    return {{"p50", (r.*latency)(50)}, {"p90", (r.*latency)(90)}, {"p99", (r.*latency)(99)}};
}

nlohmann::json replay_json(const std::string& url, const remote::ReplayReport& r) {
    nlohmann::json requests = nlohmann::json::array();
    for (const remote::ReplayedRequest& q : r.requests) {
        nlohmann::json row = {{"id", q.id},
                              {"arrival_s", q.arrival_s},
                              {"prompt_tokens", q.prompt_tokens},
                              {"asked_tokens", q.asked_tokens}};
        if (q.finished()) {
            row["sent_late_ms"] = q.sent_late_ms;
            row["ttft_ms"] = q.ttft_ms();
            row["e2e_ms"] = q.e2e_ms();
            row["completion_tokens"] = q.timing.completion_tokens;
            row["finish_reason"] = q.timing.finish_reason;
        } else {
            row["error"] = q.error;
        }
        requests.push_back(row);
    }
    return {{"url", url},
            {"model", r.model},
            {"makespan_s", r.makespan_s},
            {"tokens", r.tokens},
            {"tokens_per_s", r.tokens_per_s()},
            {"failed", r.failed},
            {"ttft_ms", percentiles_json(&remote::ReplayReport::ttft_ms, r)},
            {"itl_ms", percentiles_json(&remote::ReplayReport::itl_ms, r)},
            {"e2e_ms", percentiles_json(&remote::ReplayReport::e2e_ms, r)},
            {"requests", requests}};
}

void run_remote_replay(const RemoteReplayOptions& o) {
    const remote::RemoteTarget target{o.url, api_key_from_env(o.api_key_env), o.timeout_s};
    const TraceOptions trace_options = o.trace.trace();
    const std::vector<ServingRequest> trace = generate_trace(trace_options);
    const remote::ReplayReport r = remote::replay_trace(target, trace, o.replay, stderr_progress("remote-replay"));
    if (o.json) {
        print_json(replay_json(o.url, r));
        return;
    }
    std::printf("%s, model %s (remote): %zu requests, %s, prompts of %d token ids, outputs up to %d tokens%s\n", o.url.c_str(),
                terminal_safe(r.model).c_str(), trace.size(),
                trace_options.arrival == ArrivalPattern::AllAtOnce ? "all arriving at t = 0" : "Poisson arrivals",
                trace_options.prompt_tokens, trace_options.max_output_tokens,
                o.replay.ignore_eos ? " (ignore_eos)" : " (the server may stop a request early)");
    std::printf("latencies are measured from each request's arrival\n\n");
    std::printf("| finished | failed | makespan s | tokens | tokens/s |\n| ---: | ---: | ---: | ---: | ---: |\n");
    std::printf("| %d | %d | %.2f | %lld | %.2f |\n\n", static_cast<int>(r.requests.size()) - r.failed, r.failed, r.makespan_s,
                static_cast<long long>(r.tokens), r.tokens_per_s());
    std::printf("| latency | p50 ms | p90 ms | p99 ms |\n| --- | ---: | ---: | ---: |\n");
    for (const auto& [name, latency] : {std::pair{"time to first token", &remote::ReplayReport::ttft_ms},
                                        {"inter-token", &remote::ReplayReport::itl_ms},
                                        {"end to end", &remote::ReplayReport::e2e_ms}}) {
        std::printf("| %s | %.1f | %.1f | %.1f |\n", name, (r.*latency)(50), (r.*latency)(90), (r.*latency)(99));
    }
    for (const remote::ReplayedRequest& q : r.requests) {
        if (!q.finished()) {
            std::printf("\nrequest %d failed: %s\n", q.id, terminal_safe(q.error).c_str());
            break;  // the first; --json lists every one
        }
    }
}

}  // namespace

void add_remote_replay_command(CLI::App& app) {
    auto o = std::make_shared<RemoteReplayOptions>();
    o->trace.options.arrival = ArrivalPattern::Poisson;
    o->trace.arrival = "poisson";
    CLI::App* cmd = app.add_subcommand("remote-replay", "A request trace sent to a serving engine at its arrival times, timed");
    cmd->add_option("--url", o->url, "the server's base URL, http[s]://host:port")->required();
    cmd->add_option("--api-key-env", o->api_key_env, "an environment variable holding the API key (sent as a bearer token)");
    cmd->add_option("--model", o->replay.model, "the model to ask for (default: the first /v1/models lists)");
    add_trace_options(*cmd, o->trace);
    cmd->add_flag("--ignore-eos", o->replay.ignore_eos,
                  "ask for each request's whole output length (\"ignore_eos\": vLLM, SGLang, llama-server)");
    cmd->add_option("--timeout", o->timeout_s, "seconds to wait for the server")->check(CLI::PositiveNumber);
    cmd->add_flag("--json", o->json, "machine-readable JSON on stdout, every request's timing included");
    cmd->callback([o] { run_remote_replay(*o); });
}

}  // namespace inferscope::cli
