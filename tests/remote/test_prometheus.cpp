// The Prometheus text format parser on pages written to the format's rules, histograms and
// their quantiles, and pages a server should never send.
#include "engine/remote/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/core/error.h"

namespace inferscope::remote {
namespace {

TEST(Prometheus, SamplesLabelsEscapesValuesAndTimestamps) {
    const auto families = parse_prometheus_text(
        "# HELP http_requests_total The total number of HTTP requests.\n"
        "# TYPE http_requests_total counter\n"
        "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
        "http_requests_total{method=\"post\",code=\"400\",} 3 1395066363000\r\n"
        "\n"
        "# A comment line that is neither HELP nor TYPE\n"
        "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
        "metric_without_timestamp_and_labels 12.47\n"
        "  something_weird{problem=\"division by zero\"} +Inf -3982045\n"
        "nan_value NaN\n");
    ASSERT_EQ(families.size(), 5u);
    const MetricFamily& requests = families[0];
    EXPECT_EQ(requests.name, "http_requests_total");
    EXPECT_EQ(requests.type, MetricType::Counter);
    EXPECT_EQ(requests.help, "The total number of HTTP requests.");
    ASSERT_EQ(requests.samples.size(), 2u);
    EXPECT_EQ(requests.samples[0].value, 1027);
    EXPECT_EQ(requests.samples[0].label("code"), "200");
    EXPECT_EQ(requests.samples[1].label("code"), "400");
    EXPECT_EQ(requests.samples[1].timestamp_ms, 1395066363000);
    EXPECT_FALSE(requests.samples[0].label("path").has_value());

    const MetricSample& file = families[1].samples.at(0);
    EXPECT_EQ(file.label("path"), "C:\\DIR\\FILE.TXT");
    EXPECT_EQ(file.label("error"), "Cannot find file:\n\"FILE.TXT\"");
    EXPECT_EQ(file.value, 1.458255915e9);
    EXPECT_EQ(families[1].type, MetricType::Untyped);
    EXPECT_EQ(families[2].samples.at(0).value, 12.47);
    EXPECT_FALSE(families[2].samples.at(0).timestamp_ms.has_value());
    EXPECT_TRUE(std::isinf(families[3].samples.at(0).value));
    EXPECT_EQ(families[3].samples.at(0).timestamp_ms, -3982045);
    EXPECT_TRUE(std::isnan(families[4].samples.at(0).value));
}

TEST(Prometheus, HistogramSamplesJoinTheirFamilyAndGiveQuantiles) {
    const auto families = parse_prometheus_text(
        "# HELP latency_seconds A histogram of the request duration.\n"
        "# TYPE latency_seconds histogram\n"
        "latency_seconds_bucket{model=\"a\",le=\"0.1\"} 2\n"
        "latency_seconds_bucket{model=\"a\",le=\"0.5\"} 6\n"
        "latency_seconds_bucket{model=\"a\",le=\"+Inf\"} 8\n"
        "latency_seconds_sum{model=\"a\"} 3.2\n"
        "latency_seconds_count{model=\"a\"} 8\n"
        "latency_seconds_bucket{model=\"b\",le=\"0.1\"} 2\n"
        "latency_seconds_bucket{model=\"b\",le=\"0.5\"} 2\n"
        "latency_seconds_bucket{model=\"b\",le=\"+Inf\"} 2\n"
        "latency_seconds_sum{model=\"b\"} 0.1\n"
        "latency_seconds_count{model=\"b\"} 2\n"
        "# TYPE tokens counter\n"
        "tokens_total 41\n"
        "tokens_created 1.7e9\n");
    ASSERT_EQ(families.size(), 2u);
    EXPECT_EQ(families[0].samples.size(), 10u);
    EXPECT_EQ(families[1].name, "tokens");
    EXPECT_EQ(families[1].samples.size(), 2u);

    const Histogram h = histogram_of(families[0]);
    ASSERT_EQ(h.buckets.size(), 3u);
    EXPECT_EQ(h.buckets[0], std::make_pair(0.1, 4.0));
    EXPECT_EQ(h.buckets[1], std::make_pair(0.5, 8.0));
    EXPECT_TRUE(std::isinf(h.buckets[2].first));
    EXPECT_EQ(h.buckets[2].second, 10.0);
    EXPECT_DOUBLE_EQ(h.sum, 3.3);
    EXPECT_EQ(h.count, 10.0);
    EXPECT_DOUBLE_EQ(h.mean(), 0.33);
    // Rank 2 of 10 lies in the first bucket, interpolated from 0: 0.1 * 2 / 4.
    EXPECT_DOUBLE_EQ(*h.quantile(0.2), 0.05);
    // Rank 6: the second bucket holds ranks 4..8, from 0.1 to 0.5.
    EXPECT_DOUBLE_EQ(*h.quantile(0.6), 0.3);
    // Rank 9.5 falls in +Inf: the largest finite bound.
    EXPECT_DOUBLE_EQ(*h.quantile(0.95), 0.5);
    EXPECT_FALSE(Histogram{}.quantile(0.5).has_value());
    EXPECT_THROW(histogram_of(families[1]), RemoteError);
}

void expect_refused(const std::string& page, const std::string& message) {
    try {
        parse_prometheus_text(page);
        ADD_FAILURE() << "accepted: " << page;
    } catch (const RemoteError& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
}

TEST(Prometheus, MalformedLinesAreErrorsThatNameTheLine) {
    expect_refused("ok 1\nbroken{a=\"1\" 2\n", "metrics line 2: expected ',' or '}'");
    expect_refused("x{a=\"unterminated} 1\n", "metrics line 1: unterminated label value");
    expect_refused("x{a=1} 1\n", "expected a quoted label value");
    expect_refused("x{a=\"\\q\"} 1\n", "unknown escape");
    expect_refused("x one\n", "'one' is not a sample value");
    expect_refused("x\n", "'' is not a sample value");
    expect_refused("x 1 12.5\n", "'12.5' is not a timestamp");
    expect_refused("x 1 2 3\n", "unexpected text after the timestamp");
    expect_refused("# TYPE x sometype\n", "unknown metric type for x");
    expect_refused("x 1\n# TYPE x gauge\n", "metrics line 2: the TYPE of x comes after its samples");
    expect_refused("9lives 1\n", "expected a metric name");
    expect_refused("x{9=\"a\"} 1\n", "expected a label name");
}

TEST(Prometheus, PagesPastTheLimitsAreRefused) {
    PrometheusLimits limits;
    limits.max_bytes = 16;
    EXPECT_THROW(parse_prometheus_text("a_metric_name 1\nb 2\n", limits), RemoteError);
    limits = {};
    limits.max_samples = 2;
    EXPECT_NO_THROW(parse_prometheus_text("a 1\nb 2\n", limits));
    EXPECT_THROW(parse_prometheus_text("a 1\nb 2\nc 3\n", limits), RemoteError);
    limits = {};
    limits.max_labels_per_sample = 1;
    EXPECT_THROW(parse_prometheus_text("a{x=\"1\",y=\"2\"} 1\n", limits), RemoteError);
}

}  // namespace
}  // namespace inferscope::remote
