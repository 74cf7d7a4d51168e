// A request trace replayed against the miniature server on the loopback interface: every
// request sent no earlier than its arrival with the trace's own token ids, each one's timing
// and the latency percentiles, failures recorded rather than thrown, and cancellation.
#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/remote/trace_replay.h"
#include "engine/runtime/serving_sim.h"
#include "support/loopback_server.h"

namespace inferscope::remote {
namespace {

std::vector<ServingRequest> small_trace(int requests) {
    TraceOptions t;
    t.requests = requests;
    t.median_output_tokens = 3;
    t.max_output_tokens = 6;
    t.prompt_tokens = 5;
    t.arrival = ArrivalPattern::Poisson;
    t.arrivals_per_s = 100;
    t.seed = 7;
    return generate_trace(t);
}

TEST(TraceReplay, EveryRequestAtItsArrivalWithItsOwnTokens) {
    testing::FakeCompletions fake;  // outlives the server, whose threads use it
    testing::LoopbackServer loopback;
    fake.pause_ms = 2;
    fake.install(loopback.server());
    const std::vector<ServingRequest> trace = small_trace(6);
    std::vector<int64_t> reported;
    std::mutex reported_mutex;
    const Progress progress([&](const ProgressUpdate& u) {
        std::lock_guard<std::mutex> lock(reported_mutex);
        reported.push_back(u.done);
    });
    const ReplayReport report = replay_trace({loopback.start(), "", 10}, trace, {}, progress);
    EXPECT_EQ(report.model, "fake-model");
    ASSERT_EQ(report.requests.size(), trace.size());
    EXPECT_EQ(report.failed, 0);
    int64_t tokens = 0;
    for (size_t i = 0; i < trace.size(); ++i) {
        const ReplayedRequest& r = report.requests[i];
        EXPECT_TRUE(r.finished()) << r.error;
        EXPECT_EQ(r.id, trace[i].id);
        EXPECT_EQ(r.asked_tokens, trace[i].max_new_tokens);
        EXPECT_EQ(r.prompt_tokens, 5);
        EXPECT_EQ(r.timing.completion_tokens, trace[i].max_new_tokens);  // the fake streams all it is asked for
        // Every token's arrival was timed, one piece per token as the fake streams them.
        EXPECT_EQ(r.timing.arrivals_ms.size(), static_cast<size_t>(trace[i].max_new_tokens));
        EXPECT_EQ(r.timing.inter_token_ms().size(), static_cast<size_t>(trace[i].max_new_tokens - 1));
        tokens += r.timing.completion_tokens;
    }
    EXPECT_EQ(report.tokens, tokens);
    EXPECT_EQ(reported.size(), trace.size());
    {
        std::lock_guard<std::mutex> lock(fake.mutex);
        ASSERT_TRUE(fake.last_body.at("prompt").is_array());  // the trace's token ids, not text
        EXPECT_EQ(fake.last_body.at("prompt").size(), 5u);
        EXPECT_FALSE(fake.last_body.contains("ignore_eos"));
    }
    std::printf("[ measured ] fake server, 6 requests: TTFT p50 %.1f ms, ITL p50 %.1f ms, E2E p99 %.1f ms, %.1f tokens/s\n",
                report.ttft_ms(50), report.itl_ms(50), report.e2e_ms(99), report.tokens_per_s());
}

TEST(TraceReplay, IgnoreEosIsSentOnlyWhenAsked) {
    testing::FakeCompletions fake;
    testing::LoopbackServer loopback;
    fake.pause_ms = 1;
    fake.install(loopback.server());
    const auto report = replay_trace({loopback.start(), "", 10}, small_trace(2), {"fake-model", true});
    EXPECT_EQ(report.failed, 0);
    std::lock_guard<std::mutex> lock(fake.mutex);
    EXPECT_EQ(fake.last_body.at("ignore_eos"), true);
}

TEST(TraceReplay, FailedRequestsAreRecordedNotThrown) {
    const std::string closed = "http://127.0.0.1:" + std::to_string(testing::closed_loopback_port());
    const auto report = replay_trace({closed, "", 2}, small_trace(3), {"named-model", false});
    EXPECT_EQ(report.failed, 3);
    EXPECT_EQ(report.tokens, 0);
    for (const ReplayedRequest& r : report.requests) EXPECT_NE(r.error.find("Connection"), std::string::npos) << r.error;
    EXPECT_EQ(report.ttft_ms(50), 0.0);
}

TEST(TraceReplay, CancelledBeforeTheArrivalsNothingIsSent) {
    testing::FakeCompletions fake;
    testing::LoopbackServer loopback;
    fake.install(loopback.server());
    std::vector<ServingRequest> trace = small_trace(4);
    for (ServingRequest& r : trace) r.arrival_s += 60;  // a minute away
    const Progress cancelled([](const ProgressUpdate&) {}, [] { return true; });
    const auto report = replay_trace({loopback.start(), "", 10}, trace, {"fake-model", false}, cancelled);
    EXPECT_EQ(report.failed, 4);
    for (const ReplayedRequest& r : report.requests) EXPECT_EQ(r.error, "cancelled");
    EXPECT_EQ(fake.most_in_flight.load(), 0);
}

TEST(TraceReplay, RefusesTracesItCannotReplay) {
    const RemoteTarget nowhere{"http://127.0.0.1:1", "", 1};
    EXPECT_THROW(replay_trace(nowhere, {}, {"m", false}), InvalidArgument);
    std::vector<ServingRequest> unsorted = small_trace(3);
    std::swap(unsorted[0].arrival_s, unsorted[2].arrival_s);
    EXPECT_THROW(replay_trace(nowhere, unsorted, {"m", false}), InvalidArgument);
    const std::vector<ServingRequest> too_many(kMaxReplayRequests + 1, small_trace(1)[0]);
    EXPECT_THROW(replay_trace(nowhere, too_many, {"m", false}), InvalidArgument);
}

}  // namespace
}  // namespace inferscope::remote
