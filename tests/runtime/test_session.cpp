// Session rules: batches must continue their sequences, limits give clear errors and
// leave the cache unchanged, and every step reaches the observers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/backend/default_backend.h"
#include "engine/core/error.h"
#include "engine/runtime/generator.h"
#include "engine/synth/synthetic_model.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"
#include "support/warmed_up_backend.h"

namespace inferscope {
namespace {

using testing::WarmedUpCpuBackend;

std::shared_ptr<const Model> model() {
    static const auto m = testing::tiny_model(testing::tiny_spec("llama"));
    return m;
}

TEST(Session, RejectsBatchesThatDoNotContinueASequence) {
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 32));
    const SeqId s = session.new_sequence();
    EXPECT_THROW(session.decode(Batch{}), InvalidArgument);
    EXPECT_THROW(session.decode(Batch{{1, s, 1, true}}), InvalidArgument);       // gap
    EXPECT_THROW(session.decode(Batch{{1, s + 1, 0, true}}), InvalidArgument);   // unknown sequence
    EXPECT_THROW(session.decode(Batch{{100000, s, 0, true}}), InvalidArgument);  // token outside vocab
    EXPECT_THROW(session.decode(Batch{{-1, s, 0, true}}), InvalidArgument);
    EXPECT_NO_THROW(session.decode(Batch{{1, s, 0, false}, {2, s, 1, true}}));
    EXPECT_EQ(session.sequence_length(s), 2);
    EXPECT_THROW(session.decode(Batch{{1, s, 1, true}}), InvalidArgument);  // rewrite
}

TEST(Session, ContextOverflowIsAClearErrorAndChangesNothing) {
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 8));
    const SeqId s = session.new_sequence();
    Batch batch;
    for (int i = 0; i < 6; ++i) batch.push_back({i + 1, s, i, i == 5});
    session.decode(batch);
    const uint64_t reserved = session.kv_cache().bytes_reserved();
    Batch too_long = {{1, s, 6, false}, {2, s, 7, false}, {3, s, 8, true}};
    try {
        session.decode(too_long);
        FAIL();
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("exceed the context size of 8"), std::string::npos) << e.what();
    }
    EXPECT_EQ(session.sequence_length(s), 6);
    EXPECT_EQ(session.kv_cache().bytes_reserved(), reserved);
}

TEST(Session, GenerateRejectsAPromptLongerThanTheContext) {
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 16));
    const std::vector<TokenId> prompt(17, 5);
    GenerationOptions options;
    try {
        generate(session, prompt, options);
        FAIL();
    } catch (const CapacityError& e) {
        EXPECT_NE(std::string(e.what()).find("17 tokens, more than the context size of 16"), std::string::npos) << e.what();
    }
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);
}

TEST(Session, GenerationStopsWhenTheContextIsFull) {
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 16));
    GenerationOptions options;
    options.n_predict = 100;
    options.sampling.temperature = 0;
    options.stop_at_end_of_generation = false;
    const std::vector<TokenId> prompt = {1, 2, 3, 4};
    const GenerationResult r = generate(session, prompt, options);
    EXPECT_EQ(r.stop_reason, "context full");
    EXPECT_EQ(r.generated.size(), 13u);  // 4 + 12 positions filled, the 13th token needs no slot
}

TEST(Session, ObserversSeeEveryStepWithPhaseAndKvBytes) {
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 64));
    std::vector<StepEvent> events;
    const int id = session.add_step_observer([&](const StepEvent& e) { events.push_back(e); });
    GenerationOptions options;
    options.n_predict = 5;
    options.n_batch = 4;
    options.sampling.temperature = 0;
    options.stop_at_end_of_generation = false;
    const std::vector<TokenId> prompt = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    generate(session, prompt, options);
    // 10 prompt tokens in chunks of 4 -> 3 prefill steps, then one decode step per token
    ASSERT_EQ(events.size(), 8u);
    const uint64_t bpt = session.kv_cache().layout().bytes_per_token();
    const uint64_t block_bytes = session.kv_cache().layout().global.block_bytes();  // no local layers: one group
    const int expected_tokens[] = {4, 4, 2, 1, 1, 1, 1, 1};
    const int expected_ctx[] = {4, 8, 10, 11, 12, 13, 14, 15};
    for (size_t i = 0; i < events.size(); ++i) {
        EXPECT_EQ(events[i].phase, i < 3 ? StepPhase::Prefill : StepPhase::Decode);
        EXPECT_EQ(events[i].n_tokens, expected_tokens[i]);
        EXPECT_EQ(events[i].context_length, expected_ctx[i]);
        EXPECT_EQ(events[i].n_sequences, 1);
        EXPECT_EQ(events[i].kv_bytes_in_use, static_cast<uint64_t>(expected_ctx[i]) * bpt);
        EXPECT_EQ(events[i].kv_bytes_reserved, static_cast<uint64_t>((expected_ctx[i] + 15) / 16) * block_bytes);
        EXPECT_GT(events[i].wall_ns, 0);
        if (i > 0) {
            EXPECT_EQ(events[i].step, events[i - 1].step + 1);
        }
    }
    session.remove_step_observer(id);
    generate(session, prompt, options);
    EXPECT_EQ(events.size(), 8u);
}

TEST(Session, InferredPhases) {
    auto options = testing::test_session_options(KvDtype::F16, 32);
    options.max_sequences = 2;
    InferenceSession session(model(), options);
    std::vector<StepPhase> phases;
    session.add_step_observer([&](const StepEvent& e) { phases.push_back(e.phase); });
    const SeqId a = session.new_sequence();
    const SeqId b = session.new_sequence();
    session.decode(Batch{{1, a, 0, false}, {2, a, 1, true}});
    session.decode(Batch{{3, a, 2, true}, {4, b, 0, false}, {5, b, 1, true}});
    session.decode(Batch{{3, a, 3, true}, {4, b, 2, true}});
    EXPECT_EQ(phases, (std::vector<StepPhase>{StepPhase::Prefill, StepPhase::Mixed, StepPhase::Decode}));
}

// A model whose mapped file is truncated while it runs: the step ends in a clear error (not
// SIGBUS), and the session's sequences are left as they were.
TEST(Session, AModelFileTruncatedWhileInUseEndsTheStepWithAClearError) {
    namespace fs = std::filesystem;
    const fs::path path = fs::temp_directory_path() / ("inferscope-truncated-" + std::to_string(::getpid()) + ".gguf");
    build_synthetic_model(testing::tiny_spec("llama")).write_file(path.string());
    const auto model = Model::load(path.string());
    ASSERT_EQ(model->file().holding_name(), "mapped") << "files under 2 MiB are mapped";
    InferenceSession session(model, testing::test_session_options(KvDtype::F32));
    const SeqId seq = session.new_sequence();
    session.decode(std::vector<BatchToken>{{1, seq, 0, true}});
    fs::resize_file(path, 4096);
    try {
        session.decode(std::vector<BatchToken>{{2, seq, 1, true}});
        FAIL() << "a step on a truncated model file returned logits";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path.string() + ": the model file changed on disk while in use"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(session.kv_cache().sequence_length(seq), 1);
    fs::remove(path);
}

std::vector<std::vector<float>> greedy_logits(InferenceSession& session) {
    std::vector<std::vector<float>> rows;
    GenerationOptions options;
    options.n_predict = 4;
    options.sampling.temperature = 0;
    options.stop_at_end_of_generation = false;
    generate(session, std::vector<TokenId>{1, 2, 3, 4, 5}, options, {},
             [&](std::span<const float> logits) { rows.emplace_back(logits.begin(), logits.end()); });
    return rows;
}

TEST(Session, WarmUpRunsTheBackendsPassesUnseenAndLeavesNoTrace) {
    std::vector<Batch> batches;
    InferenceSession session(model(), testing::test_session_options(KvDtype::F16, 64),
                             std::make_unique<WarmedUpCpuBackend>(model(), std::vector<int>{16, 1}, batches));
    std::vector<int64_t> steps;
    session.add_step_observer([&](const StepEvent& e) { steps.push_back(e.step); });
    session.warm_up();
    ASSERT_EQ(batches.size(), 2u);
    ASSERT_EQ(batches[0].size(), 16u);
    for (int i = 0; i < 16; ++i) {
        EXPECT_EQ(batches[0][i].pos, i);
        EXPECT_EQ(batches[0][i].output, i == 15);
    }
    ASSERT_EQ(batches[1].size(), 1u);
    EXPECT_EQ(batches[1][0].pos, 16);
    EXPECT_EQ(batches[1][0].seq, batches[0][0].seq);
    EXPECT_TRUE(batches[1][0].output);
    EXPECT_TRUE(steps.empty()) << "the warm-up's passes reached the observers";
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);
    const auto& backend = dynamic_cast<const WarmedUpCpuBackend&>(session.backend());
    ASSERT_EQ(backend.prepared.size(), 1u) << "the other passes prepared once";
    EXPECT_EQ(backend.prepared[0].most_tokens, 64) << "prompts up to the context";
    EXPECT_EQ(backend.prepared[0].most_logit_rows, 1) << "a row of logits for the session's one sequence";
    EXPECT_EQ(backend.prepared[0].passes_before, 2u) << "after the passes";

    // Later requests: their steps numbered from 0, their logits those of a session never warmed up.
    const std::vector<std::vector<float>> warmed = greedy_logits(session);
    ASSERT_FALSE(steps.empty());
    EXPECT_EQ(steps.front(), 0);
    std::vector<Batch> fresh_batches;
    InferenceSession fresh(model(), testing::test_session_options(KvDtype::F16, 64),
                           std::make_unique<WarmedUpCpuBackend>(model(), std::vector<int>{}, fresh_batches));
    EXPECT_EQ(warmed, greedy_logits(fresh));
}

TEST(Session, WarmUpFitsItsPassesToTheContextAndIsNothingWithoutOne) {
    std::vector<Batch> batches;
    InferenceSession small(model(), testing::test_session_options(KvDtype::F16, 10),
                           std::make_unique<WarmedUpCpuBackend>(model(), std::vector<int>{16, 1}, batches));
    small.warm_up();
    ASSERT_EQ(batches.size(), 1u) << "a prompt of the whole context, then no room for a decode step";
    EXPECT_EQ(batches[0].size(), 10u);
    EXPECT_EQ(small.kv_cache().used_block_count(), 0);
    EXPECT_EQ(dynamic_cast<const WarmedUpCpuBackend&>(small.backend()).prepared.at(0).most_tokens, 10);

    // Passes of several sequences want a row of logits for each; a caller may ask for more.
    SessionOptions several = testing::test_session_options(KvDtype::F16, 64);
    several.max_sequences = 6;
    for (const int asked : {0, 9}) {
        std::vector<Batch> its_batches;
        InferenceSession session(model(), several,
                                 std::make_unique<WarmedUpCpuBackend>(model(), std::vector<int>{16, 1}, its_batches));
        session.warm_up(asked);
        const auto& prepared = dynamic_cast<const WarmedUpCpuBackend&>(session.backend()).prepared;
        ASSERT_EQ(prepared.size(), 1u);
        EXPECT_EQ(prepared[0].most_logit_rows, asked == 0 ? 6 : 9);
    }

    batches.clear();
    InferenceSession without(model(), testing::test_session_options(KvDtype::F16, 64),
                             std::make_unique<WarmedUpCpuBackend>(model(), std::vector<int>{}, batches));
    without.warm_up();
    EXPECT_TRUE(batches.empty());
    EXPECT_TRUE(dynamic_cast<const WarmedUpCpuBackend&>(without.backend()).prepared.empty())
        << "nothing to prepare where nothing warms up";
    EXPECT_FALSE(without.needs_warm_up());
    EXPECT_FALSE(InferenceSession(model(), testing::test_session_options()).needs_warm_up())
        << "the CPU backend has nothing to warm up";
    EXPECT_TRUE(small.needs_warm_up());
}

}  // namespace
}  // namespace inferscope
