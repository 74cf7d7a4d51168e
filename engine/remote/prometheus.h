#pragma once
// Prometheus's text exposition format (version 0.0.4), as serving engines export it on
// /metrics: "# HELP" and "# TYPE" lines, then samples `name{label="value",...} value
// [timestamp]`. Histograms and summaries arrive as several sample names (_bucket, _sum,
// _count) under one family; counters as name_total (and name_created) under the family
// `name`. Parsing is strict: a malformed line is an error naming its line number.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferscope::remote {

enum class MetricType { Counter, Gauge, Histogram, Summary, Untyped };

struct MetricSample {
    std::string name;  // as written: "vllm:e2e_request_latency_seconds_bucket"
    std::vector<std::pair<std::string, std::string>> labels;
    double value = 0;
    std::optional<int64_t> timestamp_ms;

    // The label's value, or nullopt when the sample has no such label.
    std::optional<std::string_view> label(std::string_view key) const;
};

struct MetricFamily {
    std::string name;  // the TYPE line's name, else the sample's name
    MetricType type = MetricType::Untyped;
    std::string help;
    std::vector<MetricSample> samples;
};

// Limits on what one page may make the parser hold (a server is not trusted to be small).
struct PrometheusLimits {
    size_t max_bytes = 64u << 20;
    size_t max_samples = 1u << 20;
    size_t max_labels_per_sample = 64;
};

// The families of a page, in the order they first appear. Throws RemoteError for a malformed
// line ("metrics line N: ...") or a page past `limits`.
std::vector<MetricFamily> parse_prometheus_text(std::string_view text, const PrometheusLimits& limits = {});

// The family called `name`, or null.
const MetricFamily* find_family(const std::vector<MetricFamily>& families, std::string_view name);

// A histogram's cumulative buckets (upper bound, count of observations <= it), its sum and
// count, with the samples of every label set (model, rank, ...) added together.
struct Histogram {
    std::vector<std::pair<double, double>> buckets;  // ascending upper bounds; the last is +Inf
    double sum = 0;
    double count = 0;

    // The q-quantile (0 <= q <= 1) by linear interpolation inside the bucket that holds it, as
    // Prometheus's histogram_quantile does; nullopt without observations. A quantile in the
    // +Inf bucket is the largest finite upper bound.
    std::optional<double> quantile(double q) const;
    double mean() const { return count > 0 ? sum / count : 0.0; }
};
// Throws RemoteError when the family is not a histogram or a bucket lacks its "le" label.
Histogram histogram_of(const MetricFamily& family);

}  // namespace inferscope::remote
