// The metric-name table on /metrics pages written in the format each serving engine
// documents (numbers invented, names and types as exported): what each page gives for every
// quantity, what it does not export, and what stays unmapped.
#include "engine/remote/server_metrics.h"

#include <gtest/gtest.h>

#include <set>

namespace inferscope::remote {
namespace {

using Q = ServerQuantity;

// vLLM (V1 engine): prometheus_client's text format, counters declared as name_total, one
// model_name label, a *_created gauge beside each counter.
constexpr const char* kVllmPage = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 5.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 0.42
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 4096.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 1024.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 7.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 9000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 12000.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.02",model_name="Qwen/Qwen2.5-0.5B"} 10.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.04",model_name="Qwen/Qwen2.5-0.5B"} 30.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen2.5-0.5B"} 40.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 40.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 1.3
# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="Qwen/Qwen2.5-0.5B"} 900.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen2.5-0.5B"} 1000.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 1000.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 8.5
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="Qwen/Qwen2.5-0.5B"} 1.7649e+09
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",engine="0"} 1.0
)";

// SGLang with --enable-metrics: rates and usage as gauges, two tensor-parallel ranks.
constexpr const char* kSglangPage = R"(# HELP sglang:num_running_reqs The number of running requests.
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 4.0
sglang:num_running_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 4.0
# HELP sglang:num_queue_reqs The number of requests in the waiting queue.
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 2.0
# HELP sglang:token_usage The token usage.
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 0.2
sglang:token_usage{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="1"} 0.4
# HELP sglang:cache_hit_rate The prefix cache hit rate.
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 0.25
# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_sum{model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.5
sglang:time_to_first_token_seconds_bucket{le="0.1",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5.0
sglang:time_to_first_token_seconds_bucket{le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
sglang:time_to_first_token_seconds_count{model_name="meta-llama/Llama-3.1-8B-Instruct"} 10.0
# HELP sglang:gen_throughput The generation throughput (token/s).
# TYPE sglang:gen_throughput gauge
sglang:gen_throughput{model_name="meta-llama/Llama-3.1-8B-Instruct",tp_rank="0"} 512.5
)";

// Text Generation Inference: metrics-rs names without a colon, seconds histograms.
constexpr const char* kTgiPage = R"(# TYPE tgi_queue_size gauge
tgi_queue_size 3
# TYPE tgi_batch_current_size gauge
tgi_batch_current_size 6
# TYPE tgi_request_mean_time_per_token_duration histogram
tgi_request_mean_time_per_token_duration_bucket{le="0.01"} 4
tgi_request_mean_time_per_token_duration_bucket{le="0.05"} 9
tgi_request_mean_time_per_token_duration_bucket{le="+Inf"} 10
tgi_request_mean_time_per_token_duration_sum 0.2
tgi_request_mean_time_per_token_duration_count 10
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="1"} 2
tgi_request_duration_bucket{le="+Inf"} 10
tgi_request_duration_sum 25
tgi_request_duration_count 10
)";

// llama.cpp's llama-server --metrics: counters declared with their _total names, no labels.
constexpr const char* kLlamaServerPage = R"(# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3469
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.125
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
# HELP llamacpp:predicted_tokens_seconds Average generation throughput in tokens/s.
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 45.5
)";

ServerMetrics read(const char* page) { return read_server_metrics(parse_prometheus_text(page)); }

// The quantities a page exports, as a set.
std::set<Q> exported(const ServerMetrics& m) {
    std::set<Q> out;
    for (const ServerReading& r : m.readings) {
        if (r.exported()) out.insert(r.quantity);
    }
    return out;
}

TEST(ServerMetrics, VllmPage) {
    const ServerMetrics m = read(kVllmPage);
    EXPECT_EQ(m.engine, "vLLM");
    EXPECT_EQ(m[Q::RequestsRunning].value, 3.0);
    EXPECT_EQ(m[Q::RequestsWaiting].value, 5.0);
    EXPECT_EQ(m[Q::KvCacheUsage].value, 0.42);
    EXPECT_EQ(m[Q::KvCacheUsage].family, "vllm:kv_cache_usage_perc");
    EXPECT_EQ(m[Q::PrefixCacheQueries].value, 4096.0);
    EXPECT_EQ(m[Q::PrefixCacheHits].value, 1024.0);
    EXPECT_EQ(m[Q::Preemptions].value, 7.0);
    EXPECT_EQ(m[Q::PromptTokens].value, 9000.0);
    EXPECT_EQ(m[Q::GenerationTokens].value, 12000.0);
    ASSERT_TRUE(m[Q::TimeToFirstToken].histogram.has_value());
    EXPECT_EQ(m[Q::TimeToFirstToken].histogram->count, 40.0);
    EXPECT_DOUBLE_EQ(*m[Q::TimeToFirstToken].histogram->quantile(0.5), 0.03);  // rank 20 of 10..30
    EXPECT_EQ(m[Q::InterTokenLatency].family, "vllm:inter_token_latency_seconds");
    // Not on this page: the rate form of the prefix cache, speculative decoding, end-to-end.
    EXPECT_EQ(exported(m).count(Q::PrefixCacheHitRate), 0u);
    EXPECT_FALSE(m[Q::SpecAcceptedTokens].exported());
    EXPECT_FALSE(m[Q::EndToEndLatency].exported());
    EXPECT_EQ(m.unmapped, (std::vector<std::string>{"vllm:num_preemptions_created", "vllm:cache_config_info"}));
}

TEST(ServerMetrics, OlderVllmNamesAreReadWhereTheNewOnesAreMissing) {
    const ServerMetrics m = read(
        "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc{model_name=\"m\"} 0.75\n"
        "# TYPE vllm:time_per_output_token_seconds histogram\n"
        "vllm:time_per_output_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 3\n"
        "vllm:time_per_output_token_seconds_sum{model_name=\"m\"} 0.3\n"
        "vllm:time_per_output_token_seconds_count{model_name=\"m\"} 3\n"
        "# TYPE vllm:num_preemptions counter\nvllm:num_preemptions_total{model_name=\"m\"} 2\n");
    EXPECT_EQ(m[Q::KvCacheUsage].value, 0.75);
    EXPECT_EQ(m[Q::InterTokenLatency].family, "vllm:time_per_output_token_seconds");
    EXPECT_DOUBLE_EQ(m[Q::InterTokenLatency].histogram->mean(), 0.1);
    // A counter declared without _total is found under either spelling.
    EXPECT_EQ(m[Q::Preemptions].family, "vllm:num_preemptions");
    EXPECT_EQ(m[Q::Preemptions].value, 2.0);
    EXPECT_TRUE(m.unmapped.empty());
}

TEST(ServerMetrics, SglangPageAveragesFractionsAndAddsCounts) {
    const ServerMetrics m = read(kSglangPage);
    EXPECT_EQ(m.engine, "SGLang");
    EXPECT_EQ(m[Q::RequestsRunning].value, 8.0);  // two ranks' batches
    EXPECT_EQ(m[Q::RequestsWaiting].value, 2.0);
    EXPECT_DOUBLE_EQ(*m[Q::KvCacheUsage].value, 0.3);  // the mean of 0.2 and 0.4
    EXPECT_EQ(m[Q::PrefixCacheHitRate].value, 0.25);
    EXPECT_DOUBLE_EQ(m[Q::TimeToFirstToken].histogram->mean(), 0.25);
    EXPECT_EQ(exported(m), (std::set<Q>{Q::KvCacheUsage, Q::RequestsRunning, Q::RequestsWaiting, Q::PrefixCacheHitRate,
                                        Q::TimeToFirstToken}));
    EXPECT_EQ(m.unmapped, std::vector<std::string>{"sglang:gen_throughput"});
}

TEST(ServerMetrics, TgiPage) {
    const ServerMetrics m = read(kTgiPage);
    EXPECT_EQ(m.engine, "TGI");
    EXPECT_EQ(m[Q::RequestsWaiting].value, 3.0);
    EXPECT_EQ(m[Q::RequestsRunning].value, 6.0);
    EXPECT_DOUBLE_EQ(*m[Q::InterTokenLatency].histogram->quantile(0.7), 0.034);  // rank 7 of 4..9 in 0.01..0.05
    EXPECT_DOUBLE_EQ(m[Q::EndToEndLatency].histogram->mean(), 2.5);
    // TGI exports no KV-cache usage and no time to first token.
    EXPECT_FALSE(m[Q::KvCacheUsage].exported());
    EXPECT_FALSE(m[Q::TimeToFirstToken].exported());
}

TEST(ServerMetrics, LlamaServerPage) {
    const ServerMetrics m = read(kLlamaServerPage);
    EXPECT_EQ(m.engine, "llama.cpp");
    EXPECT_EQ(m[Q::PromptTokens].value, 6886.0);
    EXPECT_EQ(m[Q::GenerationTokens].value, 3469.0);
    EXPECT_EQ(m[Q::KvCacheUsage].value, 0.125);
    EXPECT_EQ(m[Q::RequestsRunning].value, 1.0);
    EXPECT_EQ(m[Q::RequestsWaiting].value, 0.0);
    EXPECT_FALSE(m[Q::InterTokenLatency].exported());
    EXPECT_EQ(m.unmapped, std::vector<std::string>{"llamacpp:predicted_tokens_seconds"});
}

TEST(ServerMetrics, AnUnknownServerExportsNothingAndKeepsEveryName) {
    const ServerMetrics m = read("# TYPE my_queue gauge\nmy_queue 4\nprocess_cpu_seconds_total 12.5\n");
    EXPECT_TRUE(m.engine.empty());
    EXPECT_TRUE(exported(m).empty());
    EXPECT_EQ(m.readings.size(), static_cast<size_t>(Q::Count));
    EXPECT_EQ(m.unmapped, (std::vector<std::string>{"my_queue", "process_cpu_seconds_total"}));
}

TEST(ServerMetrics, TheTableNamesEveryQuantityOnceAndEveryNameOnce) {
    std::set<std::string_view> names;
    std::set<Q> quantities;
    for (const ServerMetricName& n : server_metric_names()) {
        EXPECT_TRUE(names.insert(n.family).second) << n.family << " is listed twice";
        quantities.insert(n.quantity);
        EXPECT_FALSE(quantity_name(n.quantity).empty());
    }
    EXPECT_EQ(quantities.size(), static_cast<size_t>(Q::Count));
}

}  // namespace
}  // namespace inferscope::remote
