// Replayed passes against passes recorded anew: the Vulkan backend records a pass once per
// shape and replays it while the buffers it names live, so a replayed step must give the
// logits a freshly recorded one gives, bit for bit, across block boundaries, a fork (copy on
// write), the growth of the RoPE table (a re-recording) and sliding-window layers. Also the
// counts a decode step submits, and the pipelines a warmed-up session no longer creates.
#include <gtest/gtest.h>

#include "gpu/vulkan_backend_factory.h"
#include "gpu_greedy.h"
#include "gpu_test_util.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

// A fused decode step's dispatches: per layer q/k/v with the norm and the cache step,
// attention (its splits combined in the same dispatch), the output projection, gate/up with
// the norm, down; outside the layers the embedding and the output product with the final norm.
constexpr int kDecodeDispatchesPerLayer = 5;
constexpr int kDecodeDispatchesOutsideLayers = 2;

struct Trace {
    std::vector<std::vector<float>> logits;  // every logits row of every step, in order
    DeviceSubmission totals;                 // summed over the steps
    DeviceSubmission single_decode;          // a step of one token
    int steps = 0;
};

void accumulate(DeviceSubmission& total, const DeviceSubmission& step) {
    total.passes += step.passes;
    total.dispatches += step.dispatches;
    total.barriers += step.barriers;
    total.replayed += step.replayed;
    total.host_record_ns += step.host_record_ns;
}

// A 70-token prompt, 30 decode steps, a fork, then 170 steps decoding both sequences in one
// batch: positions reach 270, past the 256 the RoPE table starts with.
Trace run_trace(const std::shared_ptr<const Model>& model, bool replay) {
    gpu::VulkanBackendOptions options;
    options.validation = true;
    options.op_timestamps = false;
    options.replay = replay;
    options.kernel_tuning = "default";  // split attention, also on a CPU driver
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 512), gpu::make_vulkan_backend(model, options));
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    Trace trace;
    const auto step = [&](const Batch& batch) {
        const std::span<const float> logits = session.decode(batch);
        for (size_t row = 0; row * n_vocab < logits.size(); ++row) {
            trace.logits.emplace_back(logits.begin() + static_cast<std::ptrdiff_t>(row * n_vocab),
                                      logits.begin() + static_cast<std::ptrdiff_t>((row + 1) * n_vocab));
        }
        const DeviceSubmission submitted = session.backend().last_forward_submission().value();
        accumulate(trace.totals, submitted);
        if (batch.size() == 1) trace.single_decode = submitted;
        ++trace.steps;
    };
    std::vector<SeqId> seqs = {session.new_sequence()};
    Batch batch;
    for (int i = 0; i < 70; ++i) batch.push_back({static_cast<TokenId>(1 + (i * 37) % 290), seqs[0], i, i == 69});
    step(batch);
    for (int i = 0; i < 200; ++i) {
        if (i == 30) seqs.push_back(session.fork_sequence(seqs[0]));
        // Each sequence continues from its own last logits; the fork from its parent's, with
        // another token than the parent takes.
        const size_t rows = trace.logits.size();
        batch.clear();
        for (size_t s = 0; s < seqs.size(); ++s) {
            const bool forked_now = i == 30 && s == 1;
            const std::vector<float>& last = trace.logits[rows - (forked_now ? 1 : seqs.size() - s)];
            const TokenId next = (argmax(last) + static_cast<TokenId>(s)) % static_cast<TokenId>(n_vocab);
            batch.push_back({next, seqs[s], session.sequence_length(seqs[s]), true});
        }
        step(batch);
    }
    EXPECT_EQ(gpu::vulkan_validation_errors(session.backend()), 0) << "Vulkan validation errors (printed above)";
    return trace;
}

class GpuReplay : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuReplay, ReplayedStepsEqualFreshlyRecordedOnesBitForBit) {
    auto spec = testing::tiny_spec(GetParam());
    spec.context_length = 512;
    const auto model = testing::tiny_model(spec);
    Trace replayed, recorded;
    try {
        replayed = run_trace(model, true);
    } catch (const Error& e) {
        GTEST_SKIP() << "no usable Vulkan device (install Mesa's lavapipe): " << e.what();
    }
    recorded = run_trace(model, false);
    ASSERT_EQ(replayed.logits.size(), recorded.logits.size());
    for (size_t i = 0; i < replayed.logits.size(); ++i) ASSERT_EQ(replayed.logits[i], recorded.logits[i]) << "logits row " << i;
    EXPECT_EQ(recorded.totals.replayed, 0);
    // Every step but the prompt, the first single and batched decode, the fork's first step
    // and those after a re-recording is a replay.
    EXPECT_GE(replayed.totals.replayed, replayed.steps - 8);
    EXPECT_EQ(replayed.totals.passes, replayed.steps);
    // The same commands either way.
    EXPECT_EQ(replayed.totals.dispatches, recorded.totals.dispatches);
    EXPECT_EQ(replayed.totals.barriers, recorded.totals.barriers);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GpuReplay, ::testing::Values("qwen2", "gemma3"));

// The attention tile is part of a recorded pass's shape: a prompt of 3 tokens (tiles of
// several) and a step of 3 sequences (tiles of one), each with 3 logit rows, are recorded
// apart, and each later pass of its kind replays its own recording.
TEST(GpuReplayShape, PassesOfOneSizeWithOtherTilesAreRecordedApart) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    gpu::VulkanBackendOptions options;
    options.validation = true;
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model, options));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 512), std::move(backend));
    const auto replayed = [&](const Batch& batch) {
        session.decode(batch);
        return session.backend().last_forward_submission().value().replayed;
    };
    const auto prompt = [&](SeqId seq) { return Batch{{5, seq, 0, true}, {6, seq, 1, true}, {7, seq, 2, true}}; };
    const SeqId a = session.new_sequence(), b = session.new_sequence(), c = session.new_sequence();
    EXPECT_FALSE(replayed(prompt(a)));
    EXPECT_TRUE(replayed(prompt(b)));
    EXPECT_TRUE(replayed(prompt(c)));
    EXPECT_FALSE(replayed(Batch{{8, a, 3, true}, {8, b, 3, true}, {8, c, 3, true}})) << "tiles of one: a recording of its own";
    EXPECT_TRUE(replayed(Batch{{9, a, 4, true}, {9, b, 4, true}, {9, c, 4, true}}));
    const SeqId d = session.new_sequence();
    EXPECT_TRUE(replayed(prompt(d))) << "the prompt's recording is kept beside the step's";
    EXPECT_EQ(gpu::vulkan_validation_errors(session.backend()), 0);
}

// A decode step of one token with split attention (a 4096-token context, the default tuning's
// workgroup target): 5 dispatches per layer plus the embedding and the normed output product,
// each followed by a barrier, and the input copies' barrier; gemma3's post-norms and
// sliding-window layers included.
class GpuDecodeStep : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuDecodeStep, DispatchesAndBarriersPerLayer) {
    auto spec = testing::tiny_spec(GetParam());
    spec.context_length = 4096;
    const auto model = testing::tiny_model(spec);
    gpu::VulkanBackendOptions options;
    options.op_timestamps = false;
    options.kernel_tuning = "default";
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model, options));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 4096), std::move(backend));
    const testing::GreedyRun run = testing::greedy_with_cache(session, std::vector<TokenId>{1, 2, 3}, 2);
    ASSERT_EQ(run.ids.size(), 2u);
    const DeviceSubmission step = session.backend().last_forward_submission().value();
    const int n_layer = model->config().n_layer;
    std::printf("[ measured ] %s decode step: %d dispatches, %d barriers for %d layers\n", GetParam(), step.dispatches,
                step.barriers, n_layer);
    EXPECT_EQ(step.passes, 1);
    EXPECT_EQ(step.dispatches, kDecodeDispatchesPerLayer * n_layer + kDecodeDispatchesOutsideLayers);
    EXPECT_EQ(step.barriers, step.dispatches + 1);
}

// A device that binds fewer than the 16 storage buffers of the q/k/v mat-vec that prepares the
// cache itself runs qkv_prepare.comp apart: one more dispatch per layer, the same logits bit for bit.
TEST_P(GpuDecodeStep, FewerBindingsPrepareTheCacheApartWithTheSameLogits) {
    const auto model = testing::tiny_model(testing::tiny_spec(GetParam()));
    testing::GreedyRun runs[2];
    int dispatches[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        gpu::VulkanBackendOptions options;
        options.validation = true;
        options.max_storage_buffers_per_shader = i == 0 ? 0 : 10;
        std::unique_ptr<Backend> backend;
        INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model, options));
        InferenceSession session(model, testing::test_session_options(KvDtype::F16), std::move(backend));
        runs[i] = testing::greedy_with_cache(session, std::vector<TokenId>{1, 2, 3}, 8);
        dispatches[i] = session.backend().last_forward_submission().value().dispatches;
        EXPECT_EQ(gpu::vulkan_validation_errors(session.backend()), 0);
    }
    const int n_layer = model->config().n_layer;
    EXPECT_EQ(dispatches[0], kDecodeDispatchesPerLayer * n_layer + kDecodeDispatchesOutsideLayers);
    EXPECT_EQ(dispatches[1], (kDecodeDispatchesPerLayer + 1) * n_layer + kDecodeDispatchesOutsideLayers);
    EXPECT_EQ(runs[0].ids, runs[1].ids);
    EXPECT_EQ(runs[0].logits, runs[1].logits);
}

// A device without subgroup arithmetic runs every reduction through shared memory (the
// *_shared builds): a prompt of 12 tokens (matmul_shared, attention in tiles) and decode steps
// (matvec_shared, including the q/k/v build that stores the cache), against the CPU.
TEST_P(GpuDecodeStep, WithoutSubgroupArithmeticMatchesCpu) {
    const auto model = testing::tiny_model(testing::tiny_spec(GetParam()));
    gpu::VulkanBackendOptions options;
    options.validation = true;
    options.without_subgroup_arithmetic = true;
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model, options));
    InferenceSession gpu_session(model, testing::test_session_options(KvDtype::F32), std::move(backend));
    InferenceSession cpu_session(model, testing::test_session_options(KvDtype::F32));
    testing::expect_greedy_equal(gpu_session, cpu_session, testing::synthetic_prompt(12, model->config().n_vocab), 6, 1e-4f,
                                 std::string(GetParam()) + " without subgroup arithmetic");
    const int n_layer = model->config().n_layer;
    EXPECT_EQ(gpu_session.backend().last_forward_submission().value().dispatches,
              kDecodeDispatchesPerLayer * n_layer + kDecodeDispatchesOutsideLayers);
    EXPECT_EQ(gpu::vulkan_validation_errors(gpu_session.backend()), 0);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GpuDecodeStep, ::testing::Values("qwen2", "gemma3"));

// With a 4096-token context a decode step's attention runs in several splits (most of them
// empty at these lengths), combined by the last to finish: greedy decoding still gives the CPU's tokens and logits.
// The default tuning's workgroup target splits it on a CPU driver too.
TEST(GpuSplitAttention, DecodingMatchesCpu) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    gpu::VulkanBackendOptions options;
    options.validation = true;
    options.kernel_tuning = "default";
    std::unique_ptr<Backend> backend;
    INFERSCOPE_MAKE_OR_SKIP_GPU(backend, gpu::make_vulkan_backend(model, options));
    InferenceSession gpu_session(model, testing::test_session_options(KvDtype::F32, 4096), std::move(backend));
    InferenceSession cpu_session(model, testing::test_session_options(KvDtype::F32, 4096));
    testing::expect_greedy_equal(gpu_session, cpu_session, testing::synthetic_prompt(40, model->config().n_vocab), 20, 1e-4f,
                                 "split attention in the model");
    EXPECT_EQ(gpu::vulkan_validation_errors(gpu_session.backend()), 0);
}

// What a 40-token prompt and the 20 decode steps after it, across KV block boundaries, run:
// each step's logits and the kernels created to record it.
struct Conversation {
    std::vector<std::vector<float>> logits;
    std::vector<int> pipelines_created;  // per step
};

Conversation run_conversation(InferenceSession& session) {
    const auto n_vocab = session.model().config().n_vocab;
    ScopedSequence seq(session);
    Batch batch;
    for (int i = 0; i < 40; ++i) batch.push_back({static_cast<TokenId>(1 + (i * 37) % (n_vocab - 1)), seq.id(), i, i == 39});
    Conversation c;
    for (int step = 0; step <= 20; ++step) {
        const std::span<const float> logits = session.decode(batch);
        c.logits.emplace_back(logits.begin(), logits.end());
        c.pipelines_created.push_back(session.backend().last_forward_submission().value().pipelines_created);
        batch = {{argmax(c.logits.back()), seq.id(), session.sequence_length(seq.id()), true}};
    }
    return c;
}

class GpuWarmUp : public ::testing::TestWithParam<const char*> {};

// A warmed-up session creates no kernel for a prompt and its decode steps, so that their timings
// are those of inference alone; without the warm-up the prompt and the first decode step create
// theirs. The warm-up leaves no trace: no step for the observers, an empty cache, the same
// logits bit for bit.
TEST_P(GpuWarmUp, WarmedUpSessionCreatesNoKernelForAPromptAndItsDecodeSteps) {
    const auto model = testing::tiny_model(testing::tiny_spec(GetParam()));
    const auto session_of = [&model] {
        gpu::VulkanBackendOptions options;
        options.validation = true;
        return std::make_unique<InferenceSession>(model, testing::test_session_options(KvDtype::F16, 512),
                                                  gpu::make_vulkan_backend(model, options));
    };
    std::unique_ptr<InferenceSession> cold;
    INFERSCOPE_MAKE_OR_SKIP_GPU(cold, session_of());
    const Conversation first = run_conversation(*cold);
    EXPECT_GT(first.pipelines_created[0], 0) << "the prompt";
    EXPECT_GT(first.pipelines_created[1], 0) << "the first decode step";

    const auto warm = session_of();
    std::vector<int64_t> observed_steps;
    warm->add_step_observer([&](const StepEvent& e) { observed_steps.push_back(e.step); });
    warm->warm_up();
    EXPECT_TRUE(observed_steps.empty());
    EXPECT_EQ(warm->kv_cache().bytes_in_use(), 0u);
    const Conversation later = run_conversation(*warm);
    for (size_t step = 0; step < later.pipelines_created.size(); ++step) {
        EXPECT_EQ(later.pipelines_created[step], 0) << "step " << step;
    }
    ASSERT_EQ(observed_steps.size(), later.logits.size());
    EXPECT_EQ(observed_steps.front(), 0);
    ASSERT_EQ(later.logits.size(), first.logits.size());
    for (size_t step = 0; step < later.logits.size(); ++step)
        EXPECT_EQ(later.logits[step], first.logits[step]) << "step " << step;
    EXPECT_EQ(gpu::vulkan_validation_errors(warm->backend()), 0);
}

// The kernels a pass creates where `tokens` is the length of each sequence's part (its tokens
// after a one-token prompt already cached: a decode step for 1) and `logits_from` the first of
// its part's tokens that want logits.
int pipelines_created_by(InferenceSession& session, const std::vector<int>& tokens, const std::vector<int>& logits_from) {
    std::vector<std::unique_ptr<ScopedSequence>> sequences;
    Batch batch;
    for (size_t s = 0; s < tokens.size(); ++s) {
        const SeqId seq = sequences.emplace_back(std::make_unique<ScopedSequence>(session))->id();
        session.decode(std::vector<BatchToken>{{1, seq, 0, true}});
        for (int i = 0; i < tokens[s]; ++i) batch.push_back({static_cast<TokenId>(2 + i), seq, 1 + i, i >= logits_from[s]});
    }
    session.decode(batch);
    return session.backend().last_forward_submission().value().pipelines_created;
}

// A pass of 2 to 15 tokens runs mat-vec kernels specialized by its token count, and its output
// product by its rows of logits. Created ahead at the warm-up, a prompt of any length, a decode
// step of up to the session's sequences, a batch where a prompt ends beside decode steps and a
// verification of a few proposals find their kernels; without, such passes create their own.
TEST_P(GpuWarmUp, PassesOfOtherShapesFindTheirKernelsCreatedAhead) {
    const auto model = testing::tiny_model(testing::tiny_spec(GetParam()));
    const auto session_of = [&model](bool kernels_ahead) {
        gpu::VulkanBackendOptions options;
        options.validation = true;
        options.kernels_ahead = kernels_ahead;
        SessionOptions so = testing::test_session_options(KvDtype::F16, 512);
        so.max_sequences = 4;
        return std::make_unique<InferenceSession>(model, so, gpu::make_vulkan_backend(model, options));
    };
    std::unique_ptr<InferenceSession> without;
    INFERSCOPE_MAKE_OR_SKIP_GPU(without, session_of(false));
    without->warm_up();
    EXPECT_GT(pipelines_created_by(*without, {5}, {4}), 0) << "a 5-token prompt after a warm-up without its kernels";
    EXPECT_GT(pipelines_created_by(*without, {1, 1, 1}, {0, 0, 0}), 0) << "a decode step of 3 sequences";

    const auto ahead = session_of(true);
    ahead->warm_up();
    for (int tokens = 1; tokens <= 20; ++tokens) {
        EXPECT_EQ(pipelines_created_by(*ahead, {tokens}, {tokens - 1}), 0) << "a prompt of " << tokens << " tokens";
    }
    EXPECT_EQ(pipelines_created_by(*ahead, {1, 1}, {0, 0}), 0) << "a decode step of 2 sequences";
    EXPECT_EQ(pipelines_created_by(*ahead, {1, 1, 1, 1}, {0, 0, 0, 0}), 0) << "a decode step of 4 sequences";
    EXPECT_EQ(pipelines_created_by(*ahead, {3, 1, 1}, {2, 0, 0}), 0) << "a prompt's end beside 2 decode steps";
    EXPECT_EQ(pipelines_created_by(*ahead, {4}, {0}), 0) << "a verification of 3 proposals";
    EXPECT_EQ(gpu::vulkan_validation_errors(ahead->backend()), 0);
    // More rows of logits than the session has sequences are what `spec` asks its target's
    // warm-up for (a verification's gamma + 1); a warm-up for fewer leaves them out.
    EXPECT_GT(pipelines_created_by(*ahead, {6}, {0}), 0) << "a verification of 5 proposals after a warm-up for 4 rows";
    const auto for_six_rows = session_of(true);
    for_six_rows->warm_up(6);
    EXPECT_EQ(pipelines_created_by(*for_six_rows, {6}, {0}), 0) << "a verification of 5 proposals after a warm-up for 6 rows";
    EXPECT_EQ(pipelines_created_by(*for_six_rows, {1, 1, 1, 1}, {0, 0, 0, 0}), 0) << "a decode step of 4 sequences";
}

INSTANTIATE_TEST_SUITE_P(Architectures, GpuWarmUp, ::testing::Values("qwen2", "gemma3"));

}  // namespace
}  // namespace inferscope
