#pragma once
// What a serving engine's /metrics page says, in the quantities InferScope's panels show:
// one table maps each quantity to the metric names of vLLM, SGLang, TGI and llama.cpp's
// llama-server (newer names before older ones); a quantity no name matches is "not exported
// by this server", and families no quantity reads are kept by name to be shown raw.
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/remote/prometheus.h"

namespace inferscope::remote {

enum class ServerQuantity {
    KvCacheUsage,        // fraction of the KV cache in use, 0..1
    RequestsRunning,     // requests in the running batch
    RequestsWaiting,     // requests queued
    Preemptions,         // cumulative
    PrefixCacheQueries,  // cumulative tokens looked up in the prefix cache
    PrefixCacheHits,     // cumulative tokens found there
    PrefixCacheHitRate,  // 0..1, where a server reports a rate instead of counts
    SpecDraftTokens,     // cumulative tokens a draft proposed
    SpecAcceptedTokens,  // cumulative tokens of those accepted
    PromptTokens,        // cumulative
    GenerationTokens,    // cumulative
    TimeToFirstToken,    // histogram, seconds
    InterTokenLatency,   // histogram, seconds
    EndToEndLatency,     // histogram, seconds
    Count
};

std::string_view quantity_name(ServerQuantity q);  // "KV cache usage", ...
bool is_histogram(ServerQuantity q);

struct ServerMetricName {
    ServerQuantity quantity;
    std::string_view engine;  // "vLLM", "SGLang", "TGI", "llama.cpp"
    std::string_view family;  // as the engine's page names it
};
// The mapping, the one place that knows the engines' names.
std::span<const ServerMetricName> server_metric_names();

struct ServerReading {
    ServerQuantity quantity = ServerQuantity::Count;
    std::string family;                  // the family read; empty: not exported by this server
    std::optional<double> value;         // gauges and counters: summed over label sets (fractions averaged)
    std::optional<Histogram> histogram;  // for the latency quantities
    bool exported() const { return !family.empty(); }
};

struct ServerMetrics {
    std::string engine;                   // the engine most of the page's names belong to; empty: none known
    std::vector<ServerReading> readings;  // one per quantity, in ServerQuantity order
    std::vector<std::string> unmapped;    // families of the page no quantity reads
    const ServerReading& operator[](ServerQuantity q) const { return readings[static_cast<size_t>(q)]; }
};

ServerMetrics read_server_metrics(const std::vector<MetricFamily>& families);

}  // namespace inferscope::remote
