// `remote-metrics`: a serving engine's /metrics page (vLLM, SGLang, TGI, llama-server, or
// `serve`) read as the panels' quantities, once or every few seconds.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/remote/http_client.h"
#include "engine/remote/server_metrics.h"

namespace inferscope::cli {
namespace {

using remote::ServerQuantity;

struct RemoteMetricsOptions {
    std::string url;
    std::string api_key_env;
    double timeout_s = 10;
    double watch_s = 0;
    int count = 10;
    bool json = false;
};

std::string quantiles_ms(const remote::Histogram& h) {
    std::string out = std::to_string(static_cast<long long>(h.count)) + " observations";
    if (h.count <= 0) return out;
    char text[160];
    std::snprintf(text, sizeof text, ", mean %.1f ms, p50 %.1f ms, p90 %.1f ms, p99 %.1f ms", h.mean() * 1e3,
                  h.quantile(0.5).value_or(NAN) * 1e3, h.quantile(0.9).value_or(NAN) * 1e3, h.quantile(0.99).value_or(NAN) * 1e3);
    return out + text;
}

nlohmann::json reading_json(const remote::ServerReading& r) {
    if (!r.exported()) return {{"exported", false}};
    nlohmann::json j = {{"exported", true}, {"family", r.family}};
    if (r.value) j["value"] = *r.value;
    if (r.histogram) {
        const remote::Histogram& h = *r.histogram;
        nlohmann::json buckets = nlohmann::json::array();
        for (const auto& [upper, count] : h.buckets) {
            buckets.push_back({{"le", std::isinf(upper) ? nlohmann::json("+Inf") : nlohmann::json(upper)}, {"count", count}});
        }
        j["histogram"] = {{"count", h.count}, {"sum", h.sum}, {"buckets", buckets}};
        for (const auto& [name, q] : {std::pair{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}) {
            if (const auto v = h.quantile(q)) j["histogram"][name] = *v;
        }
    }
    return j;
}

nlohmann::json metrics_json(const std::string& url, const remote::ServerMetrics& m) {
    nlohmann::json quantities = nlohmann::json::object();
    for (const remote::ServerReading& r : m.readings)
        quantities[std::string(remote::quantity_name(r.quantity))] = reading_json(r);
    return {{"url", url}, {"engine", m.engine}, {"quantities", quantities}, {"unmapped", m.unmapped}};
}

void print_metrics(const std::string& url, const remote::ServerMetrics& m) {
    std::printf("%s: %s\n", url.c_str(),
                m.engine.empty() ? "no metric names of a known serving engine" : (m.engine + " metric names").c_str());
    for (const remote::ServerReading& r : m.readings) {
        const std::string name(remote::quantity_name(r.quantity));
        if (!r.exported()) {
            std::printf("  %-28s not exported by this server\n", name.c_str());
        } else if (r.histogram) {
            std::printf("  %-28s %s  (%s)\n", name.c_str(), quantiles_ms(*r.histogram).c_str(), terminal_safe(r.family).c_str());
        } else {
            std::printf("  %-28s %.6g  (%s)\n", name.c_str(), r.value.value_or(NAN), terminal_safe(r.family).c_str());
        }
    }
    if (!m.unmapped.empty()) {
        std::string names;
        for (const std::string& n : m.unmapped) names += (names.empty() ? "" : ", ") + n;
        std::printf("  other metrics: %s\n", terminal_safe(names).c_str());
    }
}

void run_remote_metrics(const RemoteMetricsOptions& o) {
    if (o.watch_s < 0 || !std::isfinite(o.watch_s)) throw InvalidArgument("--watch must be a number of seconds >= 0");
    if (o.count < 1) throw InvalidArgument("--count must be at least 1");
    remote::HttpClient client({o.url, api_key_from_env(o.api_key_env), o.timeout_s});
    const int snapshots = o.watch_s > 0 ? o.count : 1;
    for (int i = 0; i < snapshots; ++i) {
        if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o.watch_s));
        const remote::ServerMetrics m = remote::read_server_metrics(remote::parse_prometheus_text(client.get("/metrics")));
        if (o.json) {
            nlohmann::json j = metrics_json(o.url, m);
            if (o.watch_s > 0) {
                j["snapshot"] = i;
                std::printf("%s\n", j.dump().c_str());  // one JSON object per line while watching
                std::fflush(stdout);
            } else {
                print_json(j);
            }
        } else {
            print_metrics(o.url, m);
            std::fflush(stdout);
        }
    }
}

}  // namespace

void add_remote_metrics_command(CLI::App& app) {
    auto o = std::make_shared<RemoteMetricsOptions>();
    CLI::App* cmd = app.add_subcommand(
        "remote-metrics", "A serving engine's /metrics (vLLM, SGLang, TGI, llama-server) as KV usage, queue, latencies");
    cmd->add_option("--url", o->url, "the server's base URL, http[s]://host:port")->required();
    cmd->add_option("--api-key-env", o->api_key_env, "an environment variable holding the API key (sent as a bearer token)");
    cmd->add_option("--timeout", o->timeout_s, "seconds to wait for the server")->check(CLI::PositiveNumber);
    cmd->add_option("--watch", o->watch_s, "read the page again every this many seconds");
    cmd->add_option("--count", o->count, "with --watch: how many readings (default 10)");
    cmd->add_flag("--json", o->json, "machine-readable JSON on stdout (a line per reading with --watch)");
    cmd->callback([o] { run_remote_metrics(*o); });
}

}  // namespace inferscope::cli
