#pragma once
// What `serve` exports on /metrics, under vLLM's metric names (so that remote-metrics and the
// remote panels read it as they read vLLM): requests running and waiting, KV-cache usage,
// token and request counters, and histograms of time to first token, inter-token latency and
// end-to-end latency. Updated from the engine's thread, read from the HTTP threads.
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace inferscope::server {

class ServeMetrics {
public:
    // Without prefix caching, the page has no prefix-cache counters (a reader then says "not exported").
    ServeMetrics(std::string model_name, bool prefix_caching)
        : model_name_(std::move(model_name)), prefix_caching_(prefix_caching) {}

    void set_kv_cache_usage(double fraction);  // 0..1
    void add_prompt_tokens(int64_t count);
    void add_generation_token(double seconds_since_previous_or_negative);
    void observe_first_token(double seconds);
    // A request's prompt looked up in the prefix cache: its tokens and those found (vLLM counts tokens).
    void add_prefix_cache_lookup(int64_t prompt_tokens, int64_t cached_tokens);
    // A request's end: "length" and "stop" count as successes, by reason; others as aborted.
    void observe_finished(const std::string& finish_reason, double end_to_end_seconds);

    // The Prometheus text page, with `running` and `waiting` requests as gauges.
    std::string page(int running, int waiting) const;

private:
    static constexpr std::array<double, 16> kBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,
                                                       0.25,  0.5,   1.0,  2.5,  5.0,  10.0, 30.0, 60.0};
    struct Histogram {
        std::array<int64_t, kBounds.size()> below{};  // counts per bucket (not cumulative)
        int64_t count = 0;
        double sum = 0;
        void observe(double value);
    };
    std::string histogram_text(const char* name, const char* help, const Histogram& h) const;

    struct Totals {
        int64_t prompt_tokens = 0;
        int64_t generation_tokens = 0;
        int64_t prefix_cache_queries = 0;
        int64_t prefix_cache_hits = 0;
        std::map<std::string, int64_t> finished;  // by reason ("length", "stop", "abort", "error")
        double kv_cache_usage = 0;
    };

    std::string model_name_;
    bool prefix_caching_;
    mutable std::mutex mutex_;
    Totals totals_;
    Histogram time_to_first_token_;
    Histogram inter_token_;
    Histogram end_to_end_;
};

}  // namespace inferscope::server
