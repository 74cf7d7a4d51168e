// inferscope-cli remote-metrics against a server on the loopback interface: the quantities of
// a vLLM-style page as text and JSON, the API key taken from the environment and never
// printed, repeated readings, and clear errors for a server that is absent or sends garbage;
// remote-bench and remote-replay against fake completions; softlabels with `serve` as the teacher.
#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "support/cli_runner.h"
#include "support/loopback_server.h"
#include "support/running_server.h"

namespace inferscope {
namespace {

constexpr const char* kPage = R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 3.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.5
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.01",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{le="0.1",model_name="m"} 3.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 4.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.2
vllm:time_to_first_token_seconds_count{model_name="m"} 4.0
# TYPE process_open_fds gauge
process_open_fds 12
)";

class CliRemoteMetrics : public ::testing::Test {
protected:
    void SetUp() override {
        loopback_.server().Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
            last_authorization_ = req.get_header_value("Authorization");
            ++requests_;
            res.set_content(kPage, "text/plain; version=0.0.4");
        });
        loopback_.server().Get("/broken/metrics", [](const httplib::Request&, httplib::Response& res) {
            res.set_content("<html>not metrics</html>", "text/html");
        });
        url_ = loopback_.start();
    }

    std::string url_;
    std::string last_authorization_;
    std::atomic<int> requests_{0};
    testing::LoopbackServer loopback_;  // declared last: stopped before what its handlers use
};

TEST_F(CliRemoteMetrics, TextNamesEachQuantityAndWhatTheServerDoesNotExport) {
    const auto r = testing::run_cli("remote-metrics --url " + url_);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("vLLM metric names"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("requests running"), std::string::npos);
    EXPECT_NE(r.out.find("KV cache usage               0.5  (vllm:kv_cache_usage_perc)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("time to first token          4 observations, mean 50.0 ms, p50 55.0 ms"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("requests waiting             not exported by this server"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("other metrics: process_open_fds"), std::string::npos) << r.out;
}

TEST_F(CliRemoteMetrics, JsonAndTheApiKeyFromTheEnvironment) {
    const auto r = testing::run_command("env INFERSCOPE_TEST_KEY=k-123 " + testing::cli_path() + " remote-metrics --url " + url_ +
                                        " --api-key-env INFERSCOPE_TEST_KEY --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(last_authorization_, "Bearer k-123");
    EXPECT_EQ(r.out.find("k-123"), std::string::npos);
    EXPECT_EQ(r.err.find("k-123"), std::string::npos);
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("engine"), "vLLM");
    EXPECT_EQ(j.at("url"), url_);
    const auto& q = j.at("quantities");
    EXPECT_EQ(q.at("requests running").at("value"), 3.0);
    EXPECT_EQ(q.at("requests waiting").at("exported"), false);
    EXPECT_EQ(q.at("time to first token").at("histogram").at("count"), 4.0);
    EXPECT_DOUBLE_EQ(q.at("time to first token").at("histogram").at("p50").get<double>(), 0.055);  // rank 2 of 1..3 in 0.01..0.1
    EXPECT_EQ(q.at("time to first token").at("histogram").at("buckets").back().at("le"), "+Inf");
    EXPECT_EQ(j.at("unmapped"), nlohmann::json::array({"process_open_fds"}));

    const auto unset = testing::run_cli("remote-metrics --url " + url_ + " --api-key-env INFERSCOPE_TEST_UNSET_KEY");
    EXPECT_EQ(unset.exit_code, 1);
    EXPECT_NE(unset.err.find("--api-key-env INFERSCOPE_TEST_UNSET_KEY: the variable is not set"), std::string::npos) << unset.err;
}

TEST_F(CliRemoteMetrics, WatchReadsThePageAgainOneJsonLineEach) {
    const auto r = testing::run_cli("remote-metrics --url " + url_ + " --watch 0.05 --count 3 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(requests_.load(), 3);
    std::istringstream lines(r.out);
    std::string line;
    int snapshot = 0;
    while (std::getline(lines, line)) EXPECT_EQ(nlohmann::json::parse(line).at("snapshot"), snapshot++);
    EXPECT_EQ(snapshot, 3);
}

TEST_F(CliRemoteMetrics, ErrorsNameTheServerAndTheProblem) {
    const auto garbage = testing::run_cli("remote-metrics --url " + url_ + "/broken");
    EXPECT_EQ(garbage.exit_code, 1);
    EXPECT_NE(garbage.err.find("error: metrics line 1: "), std::string::npos) << garbage.err;
    const std::string absent = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port());
    const auto refused = testing::run_cli("remote-metrics --url " + absent);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("error: GET " + absent + "/metrics: Connection"), std::string::npos) << refused.err;
    const auto not_a_url = testing::run_cli("remote-metrics --url localhost:8000");
    EXPECT_EQ(not_a_url.exit_code, 1);
    EXPECT_NE(not_a_url.err.find("is not an http:// or https:// URL"), std::string::npos) << not_a_url.err;
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(CliRemoteBench, EachConcurrencyLevelAsARowAndEveryStreamInJson) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.pause_ms = 5;
    fake.props_page = R"({"default_generation_settings":{"n_ctx":8192}})";
    fake.serve_metrics = true;
    fake.install(loopback.server());
    const std::string url = loopback.start();
    const auto table = testing::run_cli("remote-bench --url " + url + " -p Hello -n 4 --concurrency 1,2");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("model fake-model, 4 tokens per request (remote)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("context: 8192 tokens (/props n_ctx)"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("| server running (max) | server KV usage (max) |"), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("| 1 | 4 | "), std::string::npos) << table.out;
    EXPECT_NE(table.out.find("| 2 | 8 | "), std::string::npos) << table.out;
    fake.hold_until_in_flight = 2;
    const auto r = testing::run_cli("remote-bench --url " + url + " -p Hello -n 3 --concurrency 2 --chat --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("model"), "fake-model");
    EXPECT_EQ(j.at("context_tokens"), 8192);
    EXPECT_EQ(j.at("context_source"), "/props n_ctx");
    EXPECT_EQ(j.at("chat"), true);
    const auto& level = j.at("levels").at(0);
    EXPECT_EQ(level.at("concurrency"), 2);
    EXPECT_EQ(level.at("tokens"), 6);
    ASSERT_EQ(level.at("streams").size(), 2u);
    EXPECT_EQ(level.at("streams").at(0).at("arrivals_ms").size(), 3u);
    EXPECT_EQ(level.at("streams").at(1).at("finish_reason"), "length");
    EXPECT_EQ(fake.most_in_flight.load(), 2);
    // Whether a page fell within the level depends on timing; its shape does not.
    const auto& server = level.at("server");
    EXPECT_TRUE(server.at("metrics_pages").is_number_integer());
    EXPECT_EQ(server.at("running_max").is_number(), server.at("metrics_pages") > 0);
    const int reads_before = fake.metrics_reads.load();
    const auto quiet = testing::run_cli("remote-bench --url " + url + " -p Hello -n 2 --metrics-interval 0 --json");
    ASSERT_EQ(quiet.exit_code, 0) << quiet.err;
    EXPECT_EQ(nlohmann::json::parse(quiet.out).at("levels").at(0).at("server").at("metrics_pages"), 0);
    EXPECT_EQ(fake.metrics_reads.load(), reads_before);
    const auto refused =
        testing::run_cli("remote-bench --url http://127.0.0.1:" + std::to_string(testing::closed_loopback_port()) + " -p x -n 2");
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("/v1/models: Connection"), std::string::npos) << refused.err;
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(CliRemoteReplay, TheTraceSentAtItsArrivalsAndItsLatencies) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.pause_ms = 2;
    fake.install(loopback.server());
    const std::string url = loopback.start();
    const std::string trace = " --requests 4 --rate 200 --median 2 --max 3 --prompt 3 --seed 5";
    const auto r = testing::run_cli("remote-replay --url " + url + trace + " --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("model"), "fake-model");
    EXPECT_EQ(j.at("failed"), 0);
    ASSERT_EQ(j.at("requests").size(), 4u);
    int tokens = 0;
    for (const auto& q : j.at("requests")) {
        EXPECT_EQ(q.at("prompt_tokens"), 3);
        EXPECT_EQ(q.at("completion_tokens"), q.at("asked_tokens"));
        EXPECT_TRUE(q.at("ttft_ms").is_number() && q.at("e2e_ms").is_number() && q.at("sent_late_ms").is_number()) << q;
        EXPECT_FALSE(q.contains("error")) << q;
        tokens += q.at("completion_tokens").get<int>();
    }
    EXPECT_EQ(j.at("tokens"), tokens);
    for (const char* latency : {"ttft_ms", "itl_ms", "e2e_ms"}) {
        for (const char* p : {"p50", "p90", "p99"}) EXPECT_TRUE(j.at(latency).at(p).is_number()) << latency << " " << p;
    }
    const auto table = testing::run_cli("remote-replay --url " + url + trace + " --ignore-eos");
    ASSERT_EQ(table.exit_code, 0) << table.err;
    EXPECT_NE(table.out.find("4 requests, Poisson arrivals, prompts of 3 token ids, outputs up to 3 tokens (ignore_eos)"),
              std::string::npos)
        << table.out;
    EXPECT_NE(table.out.find("| time to first token | "), std::string::npos) << table.out;
    std::lock_guard<std::mutex> lock(fake.mutex);
    EXPECT_EQ(fake.last_body.at("ignore_eos"), true);
}

TEST(CliRemoteReplay, FailedRequestsAreCountedAndNamed) {
    const std::string closed = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port());
    const auto named = testing::run_cli("remote-replay --url " + closed + " --model m --requests 2 --rate 100 --max 2 --median 1");
    EXPECT_EQ(named.exit_code, 0) << named.err;
    EXPECT_NE(named.out.find("| 0 | 2 | "), std::string::npos) << named.out;
    EXPECT_NE(named.out.find("failed: "), std::string::npos) << named.out;
    const auto unnamed = testing::run_cli("remote-replay --url " + closed + " --requests 2");
    EXPECT_EQ(unnamed.exit_code, 1);
    EXPECT_NE(unnamed.err.find("/v1/models: Connection"), std::string::npos) << unnamed.err;
}

// `serve` on the built-in model as the teacher: the same top tokens as the local teacher, their
// shares of the k summing to one at each temperature, and the mass the k hold.
TEST(CliSoftLabels, AServerAsTheTeacherThroughItsTopLogprobs) {
    testing::RunningServer server;
    const auto remote =
        testing::run_cli("softlabels --url " + server.url() + " -p \"Once upon a time\" --top 5 --temp 1,2 --json");
    ASSERT_EQ(remote.exit_code, 0) << remote.err;
    const auto local = testing::run_cli("softlabels -p \"Once upon a time\" --top 5 --temp 1 --json");
    ASSERT_EQ(local.exit_code, 0) << local.err;
    const auto r = nlohmann::json::parse(remote.out);
    const auto l = nlohmann::json::parse(local.out);
    ASSERT_EQ(r["temperatures"].size(), 2u);
    for (const auto& at : r["temperatures"]) {
        ASSERT_EQ(at["top"].size(), 5u);
        double sum = 0;
        for (const auto& token : at["top"]) sum += token["probability"].get<double>();
        EXPECT_NEAR(sum, 1.0, 1e-9);
        EXPECT_GT(at["known_mass_at_t1"].get<double>(), 0.0);
        EXPECT_LE(at["known_mass_at_t1"].get<double>(), 1.0 + 1e-9);
    }
    for (size_t i = 0; i < 5; ++i) EXPECT_EQ(r["temperatures"][0]["top"][i]["text"], l["temperatures"][0]["top"][i]["text"]) << i;
    const double local_ratio = l["temperatures"][0]["top_to_kth_ratio"].get<double>();
    EXPECT_NEAR(r["temperatures"][0]["top_to_kth_ratio"].get<double>(), local_ratio, local_ratio * 1e-5);  // exact but for F16 KV

    const auto too_many = testing::run_cli("softlabels --url " + server.url() + " --top 21");
    EXPECT_EQ(too_many.exit_code, 1);
    EXPECT_NE(too_many.err.find("within [1, 20]"), std::string::npos) << too_many.err;
}

}  // namespace
}  // namespace inferscope
