// Streamed completions timed against a miniature OpenAI-compatible server on the loopback
// interface: pieces, usage and finish reason read from the chunks, arrival times in order,
// a sweep that really holds N streams at once, chunks that are not completion chunks, and
// top log-probabilities in completions' and chat's shapes (or none, a clear error).
#include <gtest/gtest.h>

#include <mutex>
#include <nlohmann/json.hpp>
#include <vector>

#include "engine/core/error.h"
#include "engine/remote/next_token_logprobs.h"
#include "engine/remote/served_model.h"
#include "engine/remote/stream_bench.h"
#include "support/loopback_server.h"

namespace inferscope::remote {
namespace {

CompletionRequest ask(const std::string& model, const std::string& prompt, int max_tokens, bool chat) {
    CompletionRequest r;
    r.model = model;
    r.prompt = prompt;
    r.max_tokens = max_tokens;
    r.chat = chat;
    return r;
}

TEST(StreamBench, ACompletionTimedPieceByPiece) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.install(loopback.server());
    HttpClient client({loopback.start(), "", 10});
    EXPECT_EQ(first_served_model(client), "fake-model");
    for (const bool chat : {false, true}) {
        const StreamTiming t = stream_completion(client, ask("fake-model", "Hello", 5, chat));
        EXPECT_EQ(t.text, "t0 t1 t2 t3 t4 ");
        EXPECT_EQ(t.completion_tokens, 5);
        EXPECT_TRUE(t.usage_reported);
        EXPECT_EQ(t.finish_reason, "length");
        ASSERT_EQ(t.arrivals_ms.size(), 5u);
        EXPECT_EQ(t.ttft_ms, t.arrivals_ms[0]);
        EXPECT_TRUE(std::is_sorted(t.arrivals_ms.begin(), t.arrivals_ms.end()));
        EXPECT_EQ(t.inter_token_ms().size(), 4u);
        // What the server was asked for.
        std::lock_guard<std::mutex> lock(fake.mutex);
        EXPECT_EQ(fake.last_body.at("stream"), true);
        EXPECT_EQ(fake.last_body.at("max_tokens"), 5);
        EXPECT_EQ(fake.last_body.at("model"), "fake-model");
        EXPECT_EQ(fake.last_body.contains("messages"), chat);
        EXPECT_EQ(fake.last_body.contains("prompt"), !chat);
    }
}

TEST(StreamBench, WithoutAUsageBlockThePiecesAreCounted) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.send_usage = false;
    fake.install(loopback.server());
    HttpClient client({loopback.start(), "", 10});
    const StreamTiming t = stream_completion(client, ask("fake-model", "Hi", 3, false));
    EXPECT_FALSE(t.usage_reported);
    EXPECT_EQ(t.completion_tokens, 3);
}

TEST(StreamBench, EachLevelHoldsItsStreamsAtOnce) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.pause_ms = 20;
    fake.install(loopback.server());
    const RemoteTarget target{loopback.start(), "", 10};
    std::vector<int64_t> reported;
    const Progress progress([&](const ProgressUpdate& u) { reported.push_back(u.done); });
    fake.hold_until_in_flight = 1;
    auto levels = sweep_concurrency(target, ask("", "Hello", 6, false), {1}, progress);
    fake.hold_until_in_flight = 4;
    const auto four = sweep_concurrency(target, ask("", "Hello", 6, false), {4}, progress);
    levels.push_back(four.at(0));
    ASSERT_EQ(levels.size(), 2u);
    EXPECT_EQ(fake.most_in_flight.load(), 4);
    EXPECT_EQ(reported, (std::vector<int64_t>{1, 1}));
    for (const ConcurrencyLevel& l : levels) {
        EXPECT_EQ(l.timings.size(), static_cast<size_t>(l.streams));
        EXPECT_EQ(l.tokens, 6 * l.streams);
        for (const StreamTiming& t : l.timings) {
            EXPECT_EQ(t.arrivals_ms.size(), 6u);
            EXPECT_EQ(t.inter_token_ms().size(), 5u);
        }
    }
    std::printf("[ measured ] fake server, 20 ms per token: %.1f tokens/s with 1 stream, %.1f with 4\n", levels[0].tokens_per_s,
                levels[1].tokens_per_s);
}

// While a level's streams run, the server's own /metrics is read: the most requests it
// reported running is the level's batch as the server saw it.
TEST(StreamBench, EachLevelReadsTheServersOwnView) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.serve_metrics = true;
    fake.hold_until_in_flight = 3;
    fake.hold_until_metrics_read = true;  // the streams end only after a page saw all three
    fake.install(loopback.server());
    const RemoteTarget target{loopback.start(), "", 10};
    const auto levels = sweep_concurrency(target, ask("fake-model", "Hello", 4, false), {3}, {}, SweepOptions{10});
    ASSERT_EQ(levels.size(), 1u);
    const ConcurrencyLevel& l = levels[0];
    EXPECT_GE(l.server_pages, 1);
    EXPECT_EQ(l.server_running_max, 3.0);
    EXPECT_EQ(l.server_waiting_max, 0.0);
    EXPECT_EQ(l.server_kv_usage_max, 0.75);
    std::printf("[ measured ] %d /metrics pages read during a level of 3 streams\n", l.server_pages);
}

TEST(StreamBench, WithoutMetricsOrWithReadingOffTheLevelsRunAlone) {
    testing::FakeCompletions bare;  // no /metrics: a 404, read once
    testing::LoopbackServer bare_server;
    bare.install(bare_server.server());
    const auto without = sweep_concurrency({bare_server.start(), "", 10}, ask("fake-model", "Hi", 3, false), {2}, {}, SweepOptions{5});
    EXPECT_EQ(without.at(0).server_pages, 0);
    EXPECT_FALSE(without.at(0).server_running_max.has_value());
    EXPECT_FALSE(without.at(0).server_kv_usage_max.has_value());
    EXPECT_EQ(without.at(0).tokens, 6);

    testing::FakeCompletions with_metrics;
    testing::LoopbackServer server;
    with_metrics.serve_metrics = true;
    with_metrics.install(server.server());
    const auto off = sweep_concurrency({server.start(), "", 10}, ask("fake-model", "Hi", 3, false), {2}, {}, SweepOptions{0});
    EXPECT_EQ(off.at(0).server_pages, 0);
    EXPECT_EQ(with_metrics.metrics_reads.load(), 0);  // nothing sent the user did not ask for
}

TEST(StreamBench, CancellingStopsBetweenLevels) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.pause_ms = 1;
    fake.install(loopback.server());
    bool cancel = false;
    const Progress progress([&](const ProgressUpdate&) { cancel = true; }, [&] { return cancel; });
    const auto levels = sweep_concurrency({loopback.start(), "", 10}, ask("fake-model", "x", 2, false), {1, 2, 4}, progress);
    EXPECT_EQ(levels.size(), 1u);
}

TEST(StreamBench, ChunksThatAreNotCompletionChunks) {
    testing::LoopbackServer loopback;
    const auto serve = [&](const char* path, std::string events) {
        loopback.server().Post(
            path, [events](const httplib::Request&, httplib::Response& res) { res.set_content(events, "text/event-stream"); });
    };
    serve("/a/v1/completions", "data: not json\n\n");
    serve("/b/v1/completions", "data: {\"object\":\"text_completion\"}\n\n");
    serve("/c/v1/completions", "data: {\"error\":{\"message\":\"out of memory\"}}\n\n");
    const std::string url = loopback.start();
    const auto expect = [&](const char* prefix, const std::string& message) {
        HttpClient client({url + prefix, "", 5});
        try {
            stream_completion(client, ask("m", "x", 4, false));
            ADD_FAILURE() << prefix << ": no error";
        } catch (const RemoteError& e) {
            EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
        }
    };
    expect("/a", "a chunk that is not JSON: not json");
    expect("/b", "a stream chunk without choices");
    expect("/c", "the server reported an error mid-stream: {\"message\":\"out of memory\"}");
    EXPECT_THROW(sweep_concurrency({url, "", 5}, ask("m", "x", 4, false), {0}), InvalidArgument);
}

TEST(StreamBench, TopLogprobsInEitherShapeAndNoneIsAClearError) {
    testing::LoopbackServer loopback;
    std::mutex mutex;
    std::vector<nlohmann::json> bodies;
    const auto serve = [&](const std::string& path, std::string events) {
        loopback.server().Post(path, [&, events](const httplib::Request& req, httplib::Response& res) {
            std::lock_guard lock(mutex);
            bodies.push_back(nlohmann::json::parse(req.body));
            res.set_content(events, "text/event-stream");
        });
    };
    serve("/legacy/v1/completions",
          "data: {\"choices\":[{\"text\":\"x\",\"logprobs\":{\"tokens\":[\"x\"],\"token_logprobs\":[-0.1],"
          "\"top_logprobs\":[{\"y\":-2.0,\"x\":-0.1,\"z\":-3.0}]}}]}\n\ndata: [DONE]\n\n");
    serve("/chat/v1/chat/completions",
          "data: {\"choices\":[{\"delta\":{\"content\":\"x\"},\"logprobs\":{\"content\":[{\"token\":\"x\",\"logprob\":-0.1,"
          "\"top_logprobs\":[{\"token\":\"y\",\"logprob\":-2.0},{\"token\":\"x\",\"logprob\":-0.1}]}]}}]}\n\ndata: [DONE]\n\n");
    serve("/none/v1/completions", "data: {\"choices\":[{\"text\":\"x\"}]}\n\ndata: [DONE]\n\n");
    const std::string url = loopback.start();
    const auto last_body = [&] {
        std::lock_guard lock(mutex);
        return bodies.back();
    };

    HttpClient legacy({url + "/legacy", "", 5});
    const NextTokenLogprobs next = read_next_token_logprobs(legacy, "m", "p", 2);
    EXPECT_EQ(next.token, "x");
    EXPECT_EQ(next.top, (TopLogprobs{{"x", -0.1}, {"y", -2.0}}));  // sorted, and cut to k
    EXPECT_EQ(last_body()["logprobs"], 2);
    EXPECT_EQ(last_body()["max_tokens"], 1);

    HttpClient chat({url + "/chat", "", 5});
    CompletionRequest request = ask("m", "p", 1, true);
    request.top_logprobs = 2;
    const StreamTiming timing = stream_completion(chat, request);
    ASSERT_EQ(timing.top_logprobs.size(), 1u);
    EXPECT_EQ(timing.top_logprobs[0], (TopLogprobs{{"x", -0.1}, {"y", -2.0}}));
    EXPECT_EQ(last_body()["logprobs"], true);
    EXPECT_EQ(last_body()["top_logprobs"], 2);

    HttpClient none({url + "/none", "", 5});
    try {
        read_next_token_logprobs(none, "m", "p", 2);
        ADD_FAILURE() << "no error";
    } catch (const RemoteError& e) {
        EXPECT_NE(std::string(e.what()).find("returned no log-probabilities"), std::string::npos) << e.what();
    }
    EXPECT_THROW(read_next_token_logprobs(none, "m", "p", 21), InvalidArgument);
}

}  // namespace
}  // namespace inferscope::remote
