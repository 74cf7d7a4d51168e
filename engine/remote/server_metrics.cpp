#include "engine/remote/server_metrics.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

namespace inferscope::remote {
namespace {

using Q = ServerQuantity;

// Per quantity and engine, the newest name first: the first one a page has is read.
constexpr std::array kNames = {
    ServerMetricName{Q::KvCacheUsage, "vLLM", "vllm:kv_cache_usage_perc"},
    ServerMetricName{Q::KvCacheUsage, "vLLM", "vllm:gpu_cache_usage_perc"},
    ServerMetricName{Q::KvCacheUsage, "SGLang", "sglang:token_usage"},
    ServerMetricName{Q::KvCacheUsage, "llama.cpp", "llamacpp:kv_cache_usage_ratio"},
    ServerMetricName{Q::RequestsRunning, "vLLM", "vllm:num_requests_running"},
    ServerMetricName{Q::RequestsRunning, "SGLang", "sglang:num_running_reqs"},
    ServerMetricName{Q::RequestsRunning, "TGI", "tgi_batch_current_size"},
    ServerMetricName{Q::RequestsRunning, "llama.cpp", "llamacpp:requests_processing"},
    ServerMetricName{Q::RequestsWaiting, "vLLM", "vllm:num_requests_waiting"},
    ServerMetricName{Q::RequestsWaiting, "SGLang", "sglang:num_queue_reqs"},
    ServerMetricName{Q::RequestsWaiting, "TGI", "tgi_queue_size"},
    ServerMetricName{Q::RequestsWaiting, "llama.cpp", "llamacpp:requests_deferred"},
    ServerMetricName{Q::Preemptions, "vLLM", "vllm:num_preemptions_total"},
    ServerMetricName{Q::PrefixCacheQueries, "vLLM", "vllm:prefix_cache_queries_total"},
    ServerMetricName{Q::PrefixCacheQueries, "vLLM", "vllm:gpu_prefix_cache_queries_total"},
    ServerMetricName{Q::PrefixCacheHits, "vLLM", "vllm:prefix_cache_hits_total"},
    ServerMetricName{Q::PrefixCacheHits, "vLLM", "vllm:gpu_prefix_cache_hits_total"},
    ServerMetricName{Q::PrefixCacheHitRate, "vLLM", "vllm:gpu_prefix_cache_hit_rate"},
    ServerMetricName{Q::PrefixCacheHitRate, "SGLang", "sglang:cache_hit_rate"},
    ServerMetricName{Q::SpecDraftTokens, "vLLM", "vllm:spec_decode_num_draft_tokens_total"},
    ServerMetricName{Q::SpecAcceptedTokens, "vLLM", "vllm:spec_decode_num_accepted_tokens_total"},
    ServerMetricName{Q::PromptTokens, "vLLM", "vllm:prompt_tokens_total"},
    ServerMetricName{Q::PromptTokens, "SGLang", "sglang:prompt_tokens_total"},
    ServerMetricName{Q::PromptTokens, "llama.cpp", "llamacpp:prompt_tokens_total"},
    ServerMetricName{Q::GenerationTokens, "vLLM", "vllm:generation_tokens_total"},
    ServerMetricName{Q::GenerationTokens, "SGLang", "sglang:generation_tokens_total"},
    ServerMetricName{Q::GenerationTokens, "llama.cpp", "llamacpp:tokens_predicted_total"},
    ServerMetricName{Q::TimeToFirstToken, "vLLM", "vllm:time_to_first_token_seconds"},
    ServerMetricName{Q::TimeToFirstToken, "SGLang", "sglang:time_to_first_token_seconds"},
    ServerMetricName{Q::InterTokenLatency, "vLLM", "vllm:inter_token_latency_seconds"},
    ServerMetricName{Q::InterTokenLatency, "vLLM", "vllm:time_per_output_token_seconds"},
    ServerMetricName{Q::InterTokenLatency, "SGLang", "sglang:inter_token_latency_seconds"},
    ServerMetricName{Q::InterTokenLatency, "SGLang", "sglang:time_per_output_token_seconds"},
    ServerMetricName{Q::InterTokenLatency, "TGI", "tgi_request_mean_time_per_token_duration"},
    ServerMetricName{Q::EndToEndLatency, "vLLM", "vllm:e2e_request_latency_seconds"},
    ServerMetricName{Q::EndToEndLatency, "SGLang", "sglang:e2e_request_latency_seconds"},
    ServerMetricName{Q::EndToEndLatency, "TGI", "tgi_request_duration"},
};

// A counter is declared as name_total by some exporters and as name (samples name_total) by
// others: either spelling finds it.
const MetricFamily* find_metric(const std::vector<MetricFamily>& families, std::string_view name) {
    if (const MetricFamily* f = find_family(families, name)) return f;
    constexpr std::string_view kTotal = "_total";
    if (name.size() > kTotal.size() && name.substr(name.size() - kTotal.size()) == kTotal) {
        return find_family(families, name.substr(0, name.size() - kTotal.size()));
    }
    return nullptr;
}

bool is_fraction(ServerQuantity q) { return q == Q::KvCacheUsage || q == Q::PrefixCacheHitRate; }

// The family's own samples (not _created and the like) summed over label sets, or averaged
// for fractions; nullopt without any.
std::optional<double> scalar_value(const MetricFamily& f, ServerQuantity q) {
    double total = 0;
    int n = 0;
    for (const MetricSample& s : f.samples) {
        if (s.name != f.name && s.name != f.name + "_total") continue;
        total += s.value;
        ++n;
    }
    if (n == 0) return std::nullopt;
    return is_fraction(q) ? total / n : total;
}

}  // namespace

std::string_view quantity_name(ServerQuantity q) {
    switch (q) {
        case Q::KvCacheUsage: return "KV cache usage";
        case Q::RequestsRunning: return "requests running";
        case Q::RequestsWaiting: return "requests waiting";
        case Q::Preemptions: return "preemptions";
        case Q::PrefixCacheQueries: return "prefix cache queries";
        case Q::PrefixCacheHits: return "prefix cache hits";
        case Q::PrefixCacheHitRate: return "prefix cache hit rate";
        case Q::SpecDraftTokens: return "speculative draft tokens";
        case Q::SpecAcceptedTokens: return "speculative accepted tokens";
        case Q::PromptTokens: return "prompt tokens";
        case Q::GenerationTokens: return "generation tokens";
        case Q::TimeToFirstToken: return "time to first token";
        case Q::InterTokenLatency: return "inter-token latency";
        case Q::EndToEndLatency: return "end-to-end latency";
        case Q::Count: break;
    }
    return "";
}

bool is_histogram(ServerQuantity q) {
    return q == Q::TimeToFirstToken || q == Q::InterTokenLatency || q == Q::EndToEndLatency;
}

std::span<const ServerMetricName> server_metric_names() { return kNames; }

ServerMetrics read_server_metrics(const std::vector<MetricFamily>& families) {
    ServerMetrics m;
    m.readings.resize(static_cast<size_t>(Q::Count));
    std::map<std::string_view, int> names_per_engine;
    std::set<const MetricFamily*> mapped;
    for (size_t i = 0; i < m.readings.size(); ++i) m.readings[i].quantity = static_cast<Q>(i);
    for (const ServerMetricName& name : kNames) {
        const MetricFamily* f = find_metric(families, name.family);
        if (f == nullptr) continue;
        ++names_per_engine[name.engine];
        mapped.insert(f);
        ServerReading& r = m.readings[static_cast<size_t>(name.quantity)];
        if (r.exported()) continue;  // an earlier (newer) name was read
        if (is_histogram(name.quantity)) {
            if (f->type != MetricType::Histogram) continue;
            r.histogram = histogram_of(*f);
        } else {
            r.value = scalar_value(*f, name.quantity);
        }
        r.family = f->name;
    }
    int most = 0;
    for (const auto& [engine, count] : names_per_engine) {
        if (count > most) {
            most = count;
            m.engine = std::string(engine);
        }
    }
    for (const MetricFamily& f : families) {
        if (mapped.count(&f) == 0) m.unmapped.push_back(f.name);
    }
    return m;
}

}  // namespace inferscope::remote
