// Continuous and static batching step by step with a fake executor (one second per step,
// known tokens), then for real on a tiny model, plus the trace generator and cost model.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "engine/core/error.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/serving_sim.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"
#include "support/warmed_up_backend.h"

namespace inferscope {
namespace {

// Every step takes one second; a slot's next token is 1000 + the number of tokens it wanted so
// far, with log-probability -(that number) and the top k ids 0..k-1 where asked. A prompt
// starting with `cached_prefix` has that many tokens cached.
class CountingExecutor final : public StepExecutor {
public:
    SeqId open_sequence() override {
        open.insert(next);
        return next++;
    }
    void close_sequence(SeqId seq) override { open.erase(seq); }
    int attach_cached_prefix(SeqId, std::span<const TokenId> prompt) override {
        ++attaches;
        const bool hit =
            prompt.size() > cached_prefix.size() && std::equal(cached_prefix.begin(), cached_prefix.end(), prompt.begin());
        return hit ? static_cast<int>(cached_prefix.size()) : 0;
    }
    double run(std::span<const SlotWork> work, StepOutput& out) override {
        steps.emplace_back(work.begin(), work.end());
        const bool any_logprobs = std::any_of(work.begin(), work.end(), [](const SlotWork& w) { return w.logprobs >= 0; });
        for (const SlotWork& w : work) {
            if (!w.wants_token) continue;
            const int count = produced[w.seq]++;
            out.tokens.push_back(1000 + count);
            if (!any_logprobs) continue;
            TokenLogprobs lp;
            if (w.logprobs >= 0) lp.logprob = -static_cast<float>(count);
            for (int k = 0; k < w.logprobs; ++k) lp.top.emplace_back(k, -static_cast<float>(k));
            out.logprobs.push_back(lp);
        }
        return 1.0;
    }
    std::set<SeqId> open;
    std::map<SeqId, int> produced;
    std::vector<std::vector<SlotWork>> steps;
    SeqId next = 0;
    std::vector<TokenId> cached_prefix;
    int attaches = 0;
};

std::vector<ServingRequest> three_requests() {
    std::vector<ServingRequest> r(3);
    const int lengths[] = {1, 3, 2};
    for (int i = 0; i < 3; ++i) {
        r[static_cast<size_t>(i)].id = i;
        r[static_cast<size_t>(i)].prompt = {1, 2};
        r[static_cast<size_t>(i)].max_new_tokens = lengths[i];
    }
    return r;
}

TEST(Scheduler, ContinuousBatchingRefillsAFreedSlotAtTheNextStep) {
    const auto requests = three_requests();
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    const ServingReport report = serve(requests, options, executor);
    ASSERT_EQ(report.steps.size(), 3u);
    EXPECT_DOUBLE_EQ(report.makespan_s, 3.0);
    EXPECT_EQ(report.generated_tokens, 6);
    const auto& a = report.requests[0];
    const auto& b = report.requests[1];
    const auto& c = report.requests[2];
    EXPECT_EQ(a.output, (std::vector<TokenId>{1000}));
    EXPECT_DOUBLE_EQ(a.end_to_end_s(), 1.0);
    EXPECT_DOUBLE_EQ(b.time_to_first_token_s(), 1.0);
    EXPECT_DOUBLE_EQ(b.end_to_end_s(), 3.0);
    EXPECT_DOUBLE_EQ(b.inter_token_s(), 1.0);
    EXPECT_DOUBLE_EQ(c.queue_wait_s(), 1.0);  // admitted when A's slot freed
    EXPECT_DOUBLE_EQ(c.time_to_first_token_s(), 2.0);
    EXPECT_DOUBLE_EQ(c.end_to_end_s(), 3.0);
    // step 1 mixes C's prefill with B's decode
    EXPECT_EQ(report.steps[1].prefill_tokens, 2);
    EXPECT_EQ(report.steps[1].decode_tokens, 1);
    EXPECT_EQ(report.steps[1].padding_slots, 0);
    EXPECT_TRUE(executor.open.empty());
    EXPECT_DOUBLE_EQ(report.mean(&RequestMetrics::end_to_end_s), 7.0 / 3.0);
    EXPECT_DOUBLE_EQ(report.percentile(&RequestMetrics::end_to_end_s, 50), 3.0);
}

TEST(Scheduler, StaticBatchingRunsUntilTheLongestMemberEndsWithPadding) {
    const auto requests = three_requests();
    CountingExecutor executor;
    SchedulerOptions options;
    options.policy = BatchingPolicy::Static;
    options.slots = 2;
    const ServingReport report = serve(requests, options, executor);
    ASSERT_EQ(report.steps.size(), 5u);
    EXPECT_DOUBLE_EQ(report.makespan_s, 5.0);
    EXPECT_EQ(report.steps[1].padding_slots, 1);  // A finished but is still computed
    EXPECT_EQ(report.steps[2].padding_slots, 1);
    EXPECT_EQ(report.steps[2].active_slots, 1);
    EXPECT_DOUBLE_EQ(report.requests[0].end_to_end_s(), 1.0);  // A's own latency is unaffected
    EXPECT_DOUBLE_EQ(report.requests[2].queue_wait_s(), 3.0);  // C waits for the whole batch
    EXPECT_DOUBLE_EQ(report.requests[2].end_to_end_s(), 5.0);
    EXPECT_EQ(report.requests[2].output, (std::vector<TokenId>{1000, 1001}));
    EXPECT_TRUE(executor.open.empty());
    // positions keep advancing for padding slots
    EXPECT_EQ(executor.steps[1][0].first_position, 2);
    EXPECT_EQ(executor.steps[2][0].first_position, 3);
}

TEST(Scheduler, CancellingStopsEveryRequestAndClosesItsSequence) {
    auto requests = three_requests();
    requests[1].max_new_tokens = 100;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    const ServingReport report = serve(requests, options, executor, [](const SchedulerStep& s, ServingControl& control) {
        if (s.index == 1) control.cancel_all();
    });
    EXPECT_EQ(report.steps.size(), 2u);
    EXPECT_EQ(report.requests[1].stop_reason, "cancelled");
    EXPECT_EQ(report.requests[0].stop_reason, "length");
    EXPECT_TRUE(executor.open.empty());
}

TEST(Scheduler, CancellingOneRequestFreesItsSequenceAtOnce) {
    auto requests = three_requests();
    requests[1].max_new_tokens = 100;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    std::vector<size_t> open_after_cancel;
    const ServingReport report = serve(requests, options, executor, [&](const SchedulerStep& s, ServingControl& control) {
        if (s.index != 1) return;
        const size_t before = executor.open.size();
        control.cancel(1);
        open_after_cancel = {before, executor.open.size()};
    });
    EXPECT_EQ(open_after_cancel, (std::vector<size_t>{2, 1}));
    EXPECT_EQ(report.requests[1].stop_reason, "cancelled");
    EXPECT_EQ(report.requests[1].output.size(), 2u);
    EXPECT_EQ(report.requests[2].stop_reason, "length");  // the others run to their end
    EXPECT_TRUE(executor.open.empty());
}

TEST(Scheduler, ArrivalsLaterThanTheClockWaitIdle) {
    auto requests = three_requests();
    requests[2].arrival_s = 10.0;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    const ServingReport report = serve(requests, options, executor);
    EXPECT_DOUBLE_EQ(report.requests[2].queue_wait_s(), 0.0);
    EXPECT_DOUBLE_EQ(report.requests[2].end_to_end_s(), 2.0);
    EXPECT_DOUBLE_EQ(report.makespan_s, 12.0);
}

TEST(Scheduler, RealRunsGiveEveryRequestTheTokensItWouldGetAlone) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    auto session_options = testing::test_session_options(KvDtype::F32, 64);
    session_options.max_sequences = 3;
    InferenceSession session(model, session_options);
    std::vector<ServingRequest> requests;
    for (int i = 0; i < 5; ++i) {
        ServingRequest r;
        r.id = i;
        r.prompt = {static_cast<TokenId>(10 + i), 20, static_cast<TokenId>(30 + 7 * i)};
        r.max_new_tokens = 2 + 3 * i;
        requests.push_back(r);
    }
    SamplingParams greedy;
    greedy.temperature = 0;
    for (BatchingPolicy policy : {BatchingPolicy::Continuous, BatchingPolicy::Static}) {
        auto executor = make_engine_executor(session, greedy);
        SchedulerOptions options;
        options.policy = policy;
        options.slots = 3;
        const ServingReport report = serve(requests, options, *executor);
        for (const ServingRequest& r : requests) {
            GenerationOptions alone;
            alone.n_predict = r.max_new_tokens;
            alone.sampling = greedy;
            alone.stop_at_end_of_generation = false;
            alone.reuse_cached_prefix = false;
            EXPECT_EQ(report.requests[static_cast<size_t>(r.id)].output, generate(session, r.prompt, alone).generated)
                << batching_policy_name(policy) << " request " << r.id;
        }
        EXPECT_EQ(session.kv_cache().used_block_count(), 0);
    }
}

TEST(Scheduler, PrefixCachingStartsAnAdmittedRequestPastItsCachedTokens) {
    std::vector<ServingRequest> requests(2);
    requests[0].id = 0;
    requests[0].prompt = {5, 6, 7, 8, 9, 10};
    requests[1].id = 1;
    requests[1].prompt = {5, 6, 7};
    for (ServingRequest& r : requests) r.max_new_tokens = 2;
    for (const bool caching : {false, true}) {
        CountingExecutor executor;
        executor.cached_prefix = {5, 6, 7, 8};
        SchedulerOptions options;
        options.slots = 2;
        options.prefix_caching = caching;
        const ServingReport report = serve(requests, options, executor);
        ASSERT_FALSE(executor.steps.empty());
        const std::vector<SlotWork>& first = executor.steps.front();
        ASSERT_EQ(first.size(), 2u);
        EXPECT_EQ(executor.attaches, caching ? 2 : 0);
        EXPECT_EQ(first[0].first_position, caching ? 4 : 0);
        EXPECT_EQ(first[0].tokens, caching ? std::vector<TokenId>({9, 10}) : requests[0].prompt);
        EXPECT_EQ(first[1].tokens, requests[1].prompt);  // shorter than the cached prefix: no hit
        EXPECT_EQ(report.requests[0].cached_prompt_tokens, caching ? 4 : 0);
        EXPECT_EQ(report.requests[1].cached_prompt_tokens, 0);
        EXPECT_EQ(report.requests[0].output, (std::vector<TokenId>{1000, 1001}));
    }
}

TEST(Scheduler, RealRunsWithPrefixCachingGiveTheTokensOfRunsWithout) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    auto session_options = testing::test_session_options(KvDtype::F32, 96);
    session_options.max_sequences = 2;
    InferenceSession session(model, session_options);
    std::vector<ServingRequest> requests(3);
    for (int i = 0; i < 3; ++i) {
        requests[static_cast<size_t>(i)].id = i;
        for (int t = 0; t < 40; ++t) requests[static_cast<size_t>(i)].prompt.push_back(static_cast<TokenId>(3 + (t * 7) % 50));
        requests[static_cast<size_t>(i)].prompt.back() = static_cast<TokenId>(60 + i);  // shared but for the last token
        requests[static_cast<size_t>(i)].max_new_tokens = 6;
        requests[static_cast<size_t>(i)].arrival_s = 100.0 * i;  // each after the one before has finished
        requests[static_cast<size_t>(i)].logprobs = 3;
    }
    SamplingParams greedy;
    greedy.temperature = 0;
    std::map<bool, ServingReport> reports;
    for (const bool caching : {false, true}) {
        auto executor = make_engine_executor(session, greedy);
        SchedulerOptions options;
        options.slots = 2;
        options.prefix_caching = caching;
        reports[caching] = serve(requests, options, *executor);
    }
    const int block_tokens = session.kv_cache().layout().block_tokens();
    for (size_t i = 0; i < requests.size(); ++i) {
        EXPECT_EQ(reports[true].requests[i].output, reports[false].requests[i].output) << "request " << i;
        EXPECT_EQ(reports[false].requests[i].cached_prompt_tokens, 0);
        // The first request of the cached run may find the uncached run's blocks too.
        if (i > 0) {
            EXPECT_EQ(reports[true].requests[i].cached_prompt_tokens, 39 / block_tokens * block_tokens) << "request " << i;
        }
    }
}

// ------------------------------------------------------------------ live runs (serve_live)

// A live feed driven by the test: what each take (counted from 1) submits and cancels, and
// when it closes; records every token and end the run reports.
class ScriptedFeed final : public RequestFeed {
public:
    double now_s() const override { return 0.0; }
    void take(std::vector<ServingRequest>& submitted, std::vector<int>& cancelled) override {
        ++takes;
        submitted = submit_at[takes];
        cancelled = cancel_at[takes];
        if (takes >= close_at_take) closed_ = true;
    }
    void wait() override {
        ++waits;
        if (submit_at.upper_bound(takes) == submit_at.end()) closed_ = true;  // nothing more will come
    }
    bool closed() const override { return closed_; }
    void on_token(const RequestMetrics& request, TokenId token, const TokenLogprobs* lp) override {
        tokens[request.id].push_back(token);
        if (lp != nullptr) logprobs[request.id].push_back(*lp);
    }
    void on_finished(const RequestMetrics& request) override {
        EXPECT_EQ(ends.count(request.id), 0u) << "request " << request.id << " ended twice";
        ends[request.id] = request.stop_reason;
    }

    std::map<int, std::vector<ServingRequest>> submit_at;
    std::map<int, std::vector<int>> cancel_at;
    int close_at_take = 1 << 30;
    int takes = 0;
    int waits = 0;
    std::map<int, std::vector<TokenId>> tokens;
    std::map<int, std::vector<TokenLogprobs>> logprobs;
    std::map<int, std::string> ends;

private:
    bool closed_ = false;
};

// Fails the step it is told to, then runs as CountingExecutor does.
class FailingExecutor final : public StepExecutor {
public:
    SeqId open_sequence() override { return inner.open_sequence(); }
    void close_sequence(SeqId seq) override { inner.close_sequence(seq); }
    double run(std::span<const SlotWork> work, StepOutput& out) override {
        if (++runs == fail_at_run) failure();
        return inner.run(work, out);
    }
    CountingExecutor inner;
    int runs = 0;
    int fail_at_run = -1;
    std::function<void()> failure = [] { throw CapacityError("the KV pool is full"); };
};

TEST(LiveScheduler, ServesWhatIsSubmittedAndReportsEveryTokenAndEnd) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    feed.submit_at[4] = {three_requests()[1]};
    feed.submit_at[4][0].id = 9;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    const ServingReport report = serve_live(feed, options, executor);
    EXPECT_EQ(feed.ends, (std::map<int, std::string>{{0, "length"}, {1, "length"}, {2, "length"}, {9, "length"}}));
    EXPECT_EQ(feed.tokens[0], (std::vector<TokenId>{1000}));
    EXPECT_EQ(feed.tokens[1], (std::vector<TokenId>{1000, 1001, 1002}));
    EXPECT_EQ(feed.tokens[2], (std::vector<TokenId>{1000, 1001}));
    EXPECT_EQ(feed.tokens[9], (std::vector<TokenId>{1000, 1001, 1002}));
    EXPECT_GE(feed.waits, 1);
    EXPECT_TRUE(executor.open.empty());
    EXPECT_TRUE(report.steps.empty());  // a live run keeps no steps
    ASSERT_EQ(report.requests.size(), 4u);
    for (const RequestMetrics& m : report.requests) EXPECT_TRUE(m.output.empty()) << "request " << m.id << " kept its tokens";
    EXPECT_EQ(report.generated_tokens, 0);
}

TEST(LiveScheduler, LogprobsReachTheFeedForTheRequestsThatAskedForThem) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    feed.submit_at[1][1].logprobs = 2;
    feed.submit_at[1][2].logprobs = 0;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 3;
    serve_live(feed, options, executor);
    EXPECT_EQ(feed.logprobs.count(0), 0u);
    ASSERT_EQ(feed.logprobs[1].size(), 3u);
    ASSERT_EQ(feed.logprobs[2].size(), 2u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(feed.logprobs[1][i].logprob, -static_cast<float>(i));
        EXPECT_EQ(feed.logprobs[1][i].top, (std::vector<std::pair<TokenId, float>>{{0, -0.0f}, {1, -1.0f}}));
    }
    EXPECT_EQ(feed.logprobs[2][1].logprob, -1.0f);
    EXPECT_TRUE(feed.logprobs[2][1].top.empty());
}

TEST(LiveScheduler, ARequestCancelledBeforeItsFirstStepEndsAtOnce) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    feed.cancel_at[1] = {1};
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 1;
    serve_live(feed, options, executor);
    EXPECT_EQ(feed.ends, (std::map<int, std::string>{{0, "length"}, {1, "cancelled"}, {2, "length"}}));
    EXPECT_EQ(feed.tokens.count(1), 0u);
    EXPECT_TRUE(executor.open.empty());
}

TEST(LiveScheduler, AFailedStepEndsItsRequestsAndTheRunGoesOn) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    feed.submit_at[3] = {three_requests()[2]};
    feed.submit_at[3][0].id = 5;
    FailingExecutor executor;
    executor.fail_at_run = 2;  // request 0 ended in the first step; 1 and 2 are in the second
    SchedulerOptions options;
    options.slots = 2;
    serve_live(feed, options, executor);
    EXPECT_EQ(feed.ends, (std::map<int, std::string>{{0, "length"},
                                                     {1, "error: the KV pool is full"},
                                                     {2, "error: the KV pool is full"},
                                                     {5, "length"}}));
    EXPECT_EQ(feed.tokens[5], (std::vector<TokenId>{1000, 1001}));
    EXPECT_TRUE(executor.inner.open.empty());
}

// Unlike other failures, a lost device ends the live run: its step's requests end with the
// error, and serve_live throws it (the server then stops).
TEST(LiveScheduler, ALostDeviceEndsItsStepsRequestsAndTheRun) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    FailingExecutor executor;
    executor.fail_at_run = 2;  // request 0 ended in the first step; 1 and 2 are in the second
    executor.failure = [] { throw DeviceLostError("device lost"); };
    SchedulerOptions options;
    options.slots = 2;
    EXPECT_THROW(serve_live(feed, options, executor), DeviceLostError);
    EXPECT_EQ(feed.ends, (std::map<int, std::string>{{0, "length"}, {1, "error: device lost"}, {2, "error: device lost"}}));
    EXPECT_EQ(executor.runs, 2) << "a step ran after the device was lost";
}

TEST(LiveScheduler, ClosingCancelsWhatIsStillRunningOrWaiting) {
    ScriptedFeed feed;
    feed.submit_at[1] = three_requests();
    for (ServingRequest& r : feed.submit_at[1]) r.max_new_tokens = 100;
    feed.close_at_take = 3;
    CountingExecutor executor;
    SchedulerOptions options;
    options.slots = 2;
    serve_live(feed, options, executor);
    EXPECT_EQ(feed.ends, (std::map<int, std::string>{{0, "cancelled"}, {1, "cancelled"}, {2, "cancelled"}}));
    EXPECT_EQ(feed.tokens[0].size(), 3u);  // the third take closed the feed; its step still ran
    EXPECT_TRUE(executor.open.empty());
}

TEST(Trace, LogNormalLengthsWithTheRequestedMedianAndMaximum) {
    TraceOptions o;  // the reference request trace: 64 requests, median 18, max 231
    const auto trace = generate_trace(o);
    ASSERT_EQ(trace.size(), 64u);
    std::vector<int> lengths;
    for (const auto& r : trace) lengths.push_back(r.max_new_tokens);
    std::sort(lengths.begin(), lengths.end());
    EXPECT_EQ(lengths.back(), 231);
    EXPECT_NEAR((lengths[31] + lengths[32]) / 2.0, 18.0, 6.0);
    EXPECT_EQ(generate_trace(o)[5].max_new_tokens, trace[5].max_new_tokens);  // seeded
    o.arrival = ArrivalPattern::Poisson;
    const auto poisson = generate_trace(o);
    for (size_t i = 1; i < poisson.size(); ++i) EXPECT_GE(poisson[i].arrival_s, poisson[i - 1].arrival_s);
    EXPECT_GT(poisson.back().arrival_s, 0.0);
}

// Where the backend has a warm-up (a device compiling its kernels at a shape's first run), each
// priced step runs once untimed first; the CPU's steps are all timed.
TEST(StepCostModel, PricesStepsAfterAnUntimedOneWhereTheBackendWarmsUp) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    for (const bool warms_up : {false, true}) {
        std::vector<Batch> batches;
        SessionOptions options = testing::test_session_options(KvDtype::F16, 64);
        options.max_sequences = 2;
        InferenceSession session(model, options, testing::recording_cpu_backend(model, warms_up, batches));
        const std::vector<int> decode_batches = {2}, chunks = {4}, contexts = {8};
        StepCostModel::measure(session, decode_batches, chunks, contexts, 3, {});
        const auto runs_of = [&batches](size_t tokens) {
            return std::count_if(batches.begin(), batches.end(),
                                 [&](const Batch& b) { return b.size() == tokens && b.front().pos == 8; });
        };
        EXPECT_EQ(runs_of(2), warms_up ? 4 : 3) << "a decode step of 2 sequences";
        EXPECT_EQ(runs_of(4), warms_up ? 4 : 3) << "a 4-token chunk";
    }
}

TEST(StepCostModel, InterpolatesInTokensAndContext) {
    const StepCostModel model({{1, 100, 0.010}, {4, 100, 0.016}, {1, 300, 0.012}, {4, 300, 0.020}});
    EXPECT_DOUBLE_EQ(model.seconds(1, 100), 0.010);
    EXPECT_DOUBLE_EQ(model.seconds(2, 100), 0.012);
    EXPECT_NEAR(model.seconds(4, 200), 0.018, 1e-12);
    EXPECT_NEAR(model.seconds(8, 100), 0.024, 1e-12);  // extrapolated from the last two sizes
    // A step with 1 decode and 3 prompt tokens costs what a 4-token step costs.
    EXPECT_NEAR(model.step_seconds(1, 3, 100), 0.016, 1e-12);
    EXPECT_DOUBLE_EQ(model.seconds(0, 100), 0.0);
    EXPECT_THROW(StepCostModel({}), InvalidArgument);
    EXPECT_THROW(StepCostModel({{2, 100, 0.01}, {2, 100, 0.02}}), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
