// Prefill vs decode tables on a small synthetic model: one row per length, derived columns
// consistent with the measured ones, lengths beyond the context refused with a message.
#include "engine/instruments/prefill_decode.h"

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

PhasesOptions small_options() {
    PhasesOptions o;
    o.prompt_lengths = {4, 16, 48};
    o.context_lengths = {8, 40};
    o.decode_steps = 4;
    o.repetitions = 2;
    return o;
}

TEST(Phases, OneRowPerLengthWithConsistentColumns) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    const PhasesOptions o = small_options();
    EXPECT_EQ(phases_context_needed(o), 48);  // max(48, 40 + 4)
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, phases_context_needed(o)));
    const PhasesReport r = measure_phases(session, o);
    ASSERT_EQ(r.prefill.size(), 3u);
    ASSERT_EQ(r.decode.size(), 2u);
    for (size_t i = 0; i < r.prefill.size(); ++i) {
        const PrefillRow& p = r.prefill[i];
        EXPECT_EQ(p.n_prompt, o.prompt_lengths[i]);
        EXPECT_GT(p.total_ms, 0.0);
        EXPECT_DOUBLE_EQ(p.ms_per_token * p.n_prompt, p.total_ms);
        EXPECT_DOUBLE_EQ(p.ttft_ms, p.total_ms);
        EXPECT_NEAR(p.tokens_per_s * p.total_ms / 1000.0, p.n_prompt, 1e-9 * p.n_prompt);
    }
    for (size_t i = 0; i < r.decode.size(); ++i) {
        const DecodeRow& d = r.decode[i];
        EXPECT_EQ(d.context, o.context_lengths[i]);
        EXPECT_GT(d.step_ms, 0.0);
        EXPECT_NEAR(d.tokens_per_s * d.step_ms, 1000.0, 1e-9);
    }
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);  // every measurement freed its sequence
}

TEST(Phases, ProgressCoversPrefillThenDecodeAndCancellingReturnsAnEmptyReport) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    PhasesOptions o = small_options();
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, phases_context_needed(o)));
    std::vector<std::string> stages;
    std::vector<double> fractions;
    o.progress = Progress([&](const ProgressUpdate& u) {
        stages.emplace_back(u.stage);
        fractions.push_back(u.fraction);
    });
    EXPECT_FALSE(measure_phases(session, o).cancelled);
    // Three prompt lengths and two depths, each run once to warm up and twice timed.
    ASSERT_EQ(stages.size(), 15u);
    EXPECT_EQ(stages.front(), "pp4");
    EXPECT_EQ(stages.back(), "tg4 @ d40");
    EXPECT_DOUBLE_EQ(fractions[8], 3.0 / 5);  // the prefill tests' share of the bar
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);

    o.progress = Progress([&](const ProgressUpdate& u) { stages.emplace_back(u.stage); }, [&] { return stages.size() >= 17; });
    const PhasesReport cancelled = measure_phases(session, o);
    EXPECT_TRUE(cancelled.cancelled);
    EXPECT_EQ(stages.size(), 17u);
    EXPECT_TRUE(cancelled.prefill.empty());
    EXPECT_TRUE(cancelled.decode.empty());
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);
}

TEST(Phases, RefusesLengthsBeyondTheContext) {
    PhasesOptions o = small_options();
    o.prompt_lengths = {4, 300};
    try {
        check_phases_options(o, 256);
        FAIL() << "a 300-token prompt was accepted with a 256-token context";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("prompt length 300 is beyond the context of 256"), std::string::npos) << e.what();
    }
    o = small_options();
    o.context_lengths = {254};  // + 4 decode steps = 258 > 256
    EXPECT_THROW(check_phases_options(o, 256), InvalidArgument);
    o = small_options();
    o.prompt_lengths = {0};
    EXPECT_THROW(check_phases_options(o, 256), InvalidArgument);
    o = small_options();
    o.context_lengths.clear();
    EXPECT_THROW(check_phases_options(o, 256), InvalidArgument);
    // The session's context is the limit too.
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 32));
    EXPECT_THROW(measure_phases(session, small_options()), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
