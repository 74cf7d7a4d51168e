// Speculative decoding measured against plain decoding: the derived numbers follow from the
// two runs' own timings by their formulas, greedy output is plain greedy output, and the
// progress callback reports both stages and cancels either.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/model/model.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"
#include "engine/speculative/spec_measure.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

class SpeculativeMeasurementOnStories : public ::testing::Test {
protected:
    void SetUp() override {
        INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
        target_model_ = Model::load(testing::shared_model("stories260K.gguf").string());
        QuantRunOptions q;
        q.n_threads = 1;
        draft_model_ = quantize_model(target_model_, parse_quant_scheme("int4:row"), q).model;
        SessionOptions s;
        s.n_threads = 1;
        s.n_ctx = 128;
        target_ = std::make_unique<InferenceSession>(target_model_, s);
        draft_ = std::make_unique<InferenceSession>(draft_model_, s);
        prompt_ = target_model_->tokenizer().encode("Once upon a time", true, true);
    }

    std::shared_ptr<const Model> target_model_, draft_model_;
    std::unique_ptr<InferenceSession> target_, draft_;
    std::vector<TokenId> prompt_;
};

TEST_F(SpeculativeMeasurementOnStories, DerivedNumbersFollowFromBothRuns) {
    SpeculativeOptions o;
    o.n_predict = 40;
    o.gamma = 4;
    const SpeculativeMeasurement m = measure_speculative(*target_, *draft_, prompt_, o);
    ASSERT_FALSE(m.cancelled);
    const std::vector<TokenId>& made = m.speculative.generated;
    ASSERT_EQ(made.size(), 40u);
    ASSERT_EQ(m.plain.generated.size(), 40u);
    EXPECT_EQ(made, m.plain.generated);
    ASSERT_TRUE(m.identical_to_plain.has_value());
    EXPECT_TRUE(*m.identical_to_plain);
    const GenerationTimings& t = m.plain.timings;
    EXPECT_DOUBLE_EQ(m.plain_ms, t.ttft_ms + 39 * t.decode_ms_per_token);
    EXPECT_DOUBLE_EQ(m.cost_ratio, m.speculative.stats.draft_ms_per_step() / t.decode_ms_per_token);
    EXPECT_DOUBLE_EQ(m.speedup, m.plain_ms / m.speculative.stats.total_ms);
    // Both sessions' sequences were freed.
    EXPECT_TRUE(target_->kv_cache().sequence_ids().empty());
    EXPECT_TRUE(draft_->kv_cache().sequence_ids().empty());
}

TEST_F(SpeculativeMeasurementOnStories, ProgressReportsBothStagesAndCancelsEither) {
    SpeculativeOptions o;
    o.n_predict = 24;
    o.gamma = 2;
    std::vector<std::string> stages;
    std::vector<double> fractions;
    o.progress = Progress([&](const ProgressUpdate& u) {
        EXPECT_EQ(u.total, 24);
        stages.emplace_back(u.stage);
        fractions.push_back(u.fraction);
    });
    const SpeculativeMeasurement full = measure_speculative(*target_, *draft_, prompt_, o);
    ASSERT_FALSE(stages.empty());
    EXPECT_EQ(stages.front(), "plain decoding");
    EXPECT_EQ(stages.back(), "speculative decoding");
    EXPECT_EQ(std::count(stages.begin(), stages.end(), "plain decoding"), 24);
    // One report per verify round but the last.
    EXPECT_EQ(std::count(stages.begin(), stages.end(), "speculative decoding"), full.speculative.stats.verify_passes - 1);
    // Plain decoding fills the first half of the bar, the speculative run the second.
    EXPECT_DOUBLE_EQ(fractions[23], 0.5);
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));
    EXPECT_LT(fractions.back(), 1.0);

    // Cancelled during plain decoding: no speculative run at all.
    int64_t plain_tokens = 0;
    o.progress = Progress([&](const ProgressUpdate& u) { plain_tokens = u.stage == "plain decoding" ? u.done : plain_tokens; },
                          [&] { return plain_tokens >= 5; });
    const SpeculativeMeasurement in_plain = measure_speculative(*target_, *draft_, prompt_, o);
    EXPECT_TRUE(in_plain.cancelled);
    EXPECT_EQ(in_plain.plain.stop_reason, "cancelled");
    EXPECT_EQ(in_plain.plain.generated.size(), 5u);
    EXPECT_TRUE(in_plain.speculative.generated.empty());

    // Cancelled after the first verify round: its tokens are kept, the run stops there.
    bool speculating = false;
    o.progress = Progress([&](const ProgressUpdate& u) { speculating = u.stage == "speculative decoding"; }, [&] { return speculating; });
    const SpeculativeMeasurement in_spec = measure_speculative(*target_, *draft_, prompt_, o);
    EXPECT_TRUE(in_spec.cancelled);
    EXPECT_EQ(in_spec.speculative.stop_reason, "cancelled");
    EXPECT_EQ(in_spec.speculative.stats.verify_passes, 1);
    EXPECT_EQ(in_spec.speculative.generated.size(), static_cast<size_t>(in_spec.speculative.stats.emitted));
    EXPECT_TRUE(target_->kv_cache().sequence_ids().empty());
    EXPECT_TRUE(draft_->kv_cache().sequence_ids().empty());
}

TEST_F(SpeculativeMeasurementOnStories, SamplingReportsNoIdentityAndBadOptionsThrow) {
    SpeculativeOptions o;
    o.n_predict = 8;
    o.temperature = 0.8f;
    const SpeculativeMeasurement m = measure_speculative(*target_, *draft_, prompt_, o);
    EXPECT_FALSE(m.identical_to_plain.has_value());
    EXPECT_EQ(m.speculative.generated.size(), 8u);
    o.gamma = 0;
    EXPECT_THROW(measure_speculative(*target_, *draft_, prompt_, o), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
