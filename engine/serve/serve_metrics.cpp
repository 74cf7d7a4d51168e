#include "engine/serve/serve_metrics.h"

#include <cstdio>

namespace inferscope::server {
namespace {

std::string label_value(const std::string& text) {
    std::string out;
    for (const char c : text) {
        if (c == '\\' || c == '"') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out;
}

std::string number(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

}  // namespace

void ServeMetrics::Histogram::observe(double value) {
    size_t bucket = 0;
    while (bucket < kBounds.size() && value > kBounds[bucket]) ++bucket;
    if (bucket < kBounds.size()) ++below[bucket];
    ++count;
    sum += value;
}

void ServeMetrics::set_kv_cache_usage(double fraction) {
    std::lock_guard lock(mutex_);
    totals_.kv_cache_usage = fraction;
}

void ServeMetrics::add_prompt_tokens(int64_t count) {
    std::lock_guard lock(mutex_);
    totals_.prompt_tokens += count;
}

void ServeMetrics::add_generation_token(double seconds_since_previous) {
    std::lock_guard lock(mutex_);
    ++totals_.generation_tokens;
    if (seconds_since_previous >= 0) inter_token_.observe(seconds_since_previous);
}

void ServeMetrics::observe_first_token(double seconds) {
    std::lock_guard lock(mutex_);
    time_to_first_token_.observe(seconds);
}

void ServeMetrics::add_prefix_cache_lookup(int64_t prompt_tokens, int64_t cached_tokens) {
    std::lock_guard lock(mutex_);
    totals_.prefix_cache_queries += prompt_tokens;
    totals_.prefix_cache_hits += cached_tokens;
}

void ServeMetrics::observe_finished(const std::string& finish_reason, double end_to_end_seconds) {
    std::lock_guard lock(mutex_);
    ++totals_.finished[finish_reason];
    if (finish_reason == "length" || finish_reason == "stop") end_to_end_.observe(end_to_end_seconds);
}

std::string ServeMetrics::histogram_text(const char* name, const char* help, const Histogram& h) const {
    const std::string labels = "model_name=\"" + label_value(model_name_) + "\"";
    std::string out = std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " histogram\n";
    int64_t cumulative = 0;
    for (size_t i = 0; i < kBounds.size(); ++i) {
        cumulative += h.below[i];
        out +=
            std::string(name) + "_bucket{" + labels + ",le=\"" + number(kBounds[i]) + "\"} " + std::to_string(cumulative) + "\n";
    }
    out += std::string(name) + "_bucket{" + labels + ",le=\"+Inf\"} " + std::to_string(h.count) + "\n";
    out += std::string(name) + "_sum{" + labels + "} " + number(h.sum) + "\n";
    out += std::string(name) + "_count{" + labels + "} " + std::to_string(h.count) + "\n";
    return out;
}

std::string ServeMetrics::page(int running, int waiting) const {
    std::lock_guard lock(mutex_);
    const std::string labels = "{model_name=\"" + label_value(model_name_) + "\"}";
    const auto gauge = [&](const char* name, const char* help, const std::string& value) {
        return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + labels + " " + value + "\n";
    };
    const auto counter = [&](const char* name, const char* help, int64_t value) {
        return std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + labels + " " +
               std::to_string(value) + "\n";
    };
    std::string out = gauge("vllm:num_requests_running", "Requests in the running batch.", std::to_string(running));
    out += gauge("vllm:num_requests_waiting", "Requests waiting for a slot.", std::to_string(waiting));
    out += gauge("vllm:kv_cache_usage_perc", "KV-cache usage (1 = full).", number(totals_.kv_cache_usage));
    out += counter("vllm:prompt_tokens_total", "Prompt tokens of finished requests.", totals_.prompt_tokens);
    out += counter("vllm:generation_tokens_total", "Generated tokens.", totals_.generation_tokens);
    if (prefix_caching_) {
        out += counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
                       totals_.prefix_cache_queries);
        out += counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", totals_.prefix_cache_hits);
    }
    out += "# HELP vllm:request_success_total Requests finished, by reason.\n# TYPE vllm:request_success_total counter\n";
    for (const auto& [reason, count] : totals_.finished) {
        out += "vllm:request_success_total{model_name=\"" + label_value(model_name_) + "\",finished_reason=\"" +
               label_value(reason) + "\"} " + std::to_string(count) + "\n";
    }
    out += histogram_text("vllm:time_to_first_token_seconds", "Time to first token.", time_to_first_token_);
    out += histogram_text("vllm:inter_token_latency_seconds", "Time between consecutive tokens.", inter_token_);
    out += histogram_text("vllm:e2e_request_latency_seconds", "End-to-end latency of finished requests.", end_to_end_);
    return out;
}

}  // namespace inferscope::server
