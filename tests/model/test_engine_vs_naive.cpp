// The engine against the deliberately naive double-precision forward in this folder, on
// synthetic models of every architecture, and the KV-cached path against recomputation.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/runtime/generator.h"
#include "model/naive_forward.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

using testing::teacher_forced_logits;
using testing::test_session_options;
using testing::tiny_spec;

struct Case {
    const char* architecture;
    GgmlType dtype;
    KvDtype kv;
    double tolerance;  // max |engine - naive| / max |naive| per position
};

class EngineVsNaive : public ::testing::TestWithParam<Case> {};

TEST_P(EngineVsNaive, TeacherForcedLogitsAgree) {
    const Case c = GetParam();
    const std::vector<uint8_t> bytes = testing::tiny_model_bytes(tiny_spec(c.architecture, c.dtype));
    const auto model = Model::from_gguf(GgufFile::from_bytes(bytes, "tiny.gguf"));
    const GgufFile file = GgufFile::from_bytes(bytes, "tiny.gguf");
    const reference::NaiveModel naive = reference::load_naive_model(file);

    // 40 tokens: crosses two KV blocks of 16 and exercises RoPE beyond the first positions.
    std::vector<TokenId> tokens;
    for (int i = 0; i < 40; ++i) tokens.push_back((i * 37 + 11) % model->config().n_vocab);
    InferenceSession session(model, test_session_options(c.kv));
    const auto ours = teacher_forced_logits(session, tokens);
    const auto expected = reference::naive_logits(naive, tokens);
    ASSERT_EQ(ours.size(), expected.size());
    double worst = 0;
    for (size_t p = 0; p < ours.size(); ++p) {
        double scale = 0, diff = 0;
        for (size_t v = 0; v < ours[p].size(); ++v) {
            scale = std::max(scale, std::abs(expected[p][v]));
            diff = std::max(diff, std::abs(ours[p][v] - expected[p][v]));
        }
        worst = std::max(worst, diff / scale);
    }
    EXPECT_LT(worst, c.tolerance) << c.architecture;
    std::printf("[ measured ] %s %s kv %s: max relative logit difference %.3g\n", c.architecture,
                std::string(ggml_type_name(c.dtype)).c_str(), kv_dtype_name(c.kv), worst);
}

// F32 weights and cache: float32 against float64 arithmetic only. F16 weights: the engine
// rounds activations to F16 before the product (as llama.cpp does), which the naive forward
// does not, so the bound is wider; likewise for an F16 KV cache, and wider again for the
// 8-bit activations that quantized weights meet.
INSTANTIATE_TEST_SUITE_P(Architectures, EngineVsNaive,
                         ::testing::Values(Case{"llama", GgmlType::F32, KvDtype::F32, 1e-5},
                                           Case{"qwen2", GgmlType::F32, KvDtype::F32, 1e-5},
                                           Case{"llama", GgmlType::F16, KvDtype::F32, 2e-3},
                                           Case{"qwen2", GgmlType::F16, KvDtype::F32, 2e-3},
                                           Case{"llama", GgmlType::F32, KvDtype::F16, 2e-3},
                                           Case{"qwen2", GgmlType::BF16, KvDtype::F16, 2e-2},
                                           // Q8_0/Q4_0 weights: the engine quantizes each
                                           // activation row to Q8_0 (as llama.cpp does);
                                           // this is the error that adds.
                                           Case{"llama", GgmlType::Q8_0, KvDtype::F32, 3e-2},
                                           Case{"qwen2", GgmlType::Q4_0, KvDtype::F32, 3e-2},
                                           Case{"llama", GgmlType::IQ4_NL, KvDtype::F32, 3e-2},
                                           Case{"qwen3", GgmlType::F32, KvDtype::F32, 1e-5},
                                           Case{"qwen3", GgmlType::Q8_0, KvDtype::F16, 3e-2},
                                           // GELU through llama.cpp's F16 table against the
                                           // exact tanh GELU in double.
                                           Case{"gemma3", GgmlType::F32, KvDtype::F32, 2e-3},
                                           Case{"gemma3", GgmlType::Q8_0, KvDtype::F16, 3e-2}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                             return std::string(info.param.architecture) + "_" +
                                    std::string(ggml_type_name(info.param.dtype)) + "_kv" + kv_dtype_name(info.param.kv);
                         });

TEST(CacheVsRecompute, SameGreedyTokensAndLogits) {
    for (const char* arch : {"llama", "qwen2", "qwen3", "gemma3"}) {
        const auto model = testing::tiny_model(tiny_spec(arch));
        InferenceSession session(model, test_session_options(KvDtype::F32));
        const std::vector<TokenId> prompt = {5, 17, 200, 33, 99};
        const auto cached = testing::greedy_with_cache(session, prompt, 24);
        const auto recomputed = testing::greedy_without_cache(session, prompt, 24);
        EXPECT_EQ(cached.ids, recomputed.ids) << arch;
        for (size_t i = 0; i < cached.logits.size(); ++i) {
            EXPECT_LT(testing::relative_row_error(cached.logits[i], recomputed.logits[i]), 1e-4) << arch << " step " << i;
        }
        EXPECT_EQ(session.kv_cache().used_block_count(), 0);
    }
}

TEST(RaggedBatch, TwoSequencesInOneStepEqualEachAlone) {
    const auto model = testing::tiny_model(tiny_spec("qwen2"));
    InferenceSession session(model, [] {
        auto o = test_session_options(KvDtype::F32);
        o.max_sequences = 2;
        return o;
    }());
    const std::vector<TokenId> a = {1, 2, 3, 4, 5, 6, 7};
    const std::vector<TokenId> b = {9, 8, 7};
    const auto alone_a = teacher_forced_logits(session, a);
    const auto alone_b = teacher_forced_logits(session, b);

    const SeqId sa = session.new_sequence();
    const SeqId sb = session.new_sequence();
    Batch mixed;
    // interleaved on purpose: the batch order must not matter
    for (size_t i = 0; i < a.size(); ++i) {
        mixed.push_back({a[i], sa, static_cast<int32_t>(i), true});
        if (i < b.size()) mixed.push_back({b[i], sb, static_cast<int32_t>(i), true});
    }
    const auto flat = session.decode(mixed);
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    size_t row = 0, ia = 0, ib = 0;
    for (const BatchToken& t : mixed) {
        const std::vector<float> got(flat.begin() + static_cast<std::ptrdiff_t>(row * n_vocab),
                                     flat.begin() + static_cast<std::ptrdiff_t>((row + 1) * n_vocab));
        const auto& want = t.seq == sa ? alone_a[ia++] : alone_b[ib++];
        EXPECT_LT(testing::relative_row_error(got, want), 1e-5);
        ++row;
    }
}

// A step with one token per sequence stores each token's K and V inside the attention loop
// (no token reads another's); it must give what each sequence gives alone.
TEST(RaggedBatch, ADecodeStepOfSeveralSequencesEqualsEachAlone) {
    const auto model = testing::tiny_model(tiny_spec("qwen3"));
    InferenceSession session(model, [] {
        auto o = test_session_options(KvDtype::F16);
        o.max_sequences = 3;
        return o;
    }());
    const std::vector<std::vector<TokenId>> texts = {{1, 2, 3, 4, 5, 6}, {9, 8}, {40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57}};
    std::vector<std::vector<float>> alone_last;
    for (const auto& text : texts) alone_last.push_back(teacher_forced_logits(session, text).back());

    std::vector<SeqId> ids;
    for (const auto& text : texts) {
        const SeqId id = session.new_sequence();
        ids.push_back(id);
        Batch prompt;
        for (size_t i = 0; i + 1 < text.size(); ++i) prompt.push_back({text[i], id, static_cast<int32_t>(i), false});
        session.decode(prompt);
    }
    Batch step;
    for (size_t s = 0; s < texts.size(); ++s) {
        step.push_back({texts[s].back(), ids[s], static_cast<int32_t>(texts[s].size() - 1), true});
    }
    const auto flat = session.decode(step);
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    for (size_t s = 0; s < texts.size(); ++s) {
        const std::vector<float> got(flat.begin() + static_cast<std::ptrdiff_t>(s * n_vocab),
                                     flat.begin() + static_cast<std::ptrdiff_t>((s + 1) * n_vocab));
        EXPECT_LT(testing::relative_row_error(got, alone_last[s]), 1e-5) << "sequence " << s;
    }
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

TEST(PrefixCache, ASecondIdenticalPromptReusesBlocksAndGivesTheSameTokens) {
    const auto model = testing::tiny_model(tiny_spec("llama"));
    InferenceSession session(model, test_session_options(KvDtype::F16));
    std::vector<TokenId> prompt;
    for (int i = 0; i < 37; ++i) prompt.push_back((i * 13 + 5) % 300);  // two full blocks of 16, then 5 tokens
    GenerationOptions options;
    options.n_predict = 12;
    options.sampling.temperature = 0;
    options.stop_at_end_of_generation = false;
    const GenerationResult first = generate(session, prompt, options);
    const GenerationResult second = generate(session, prompt, options);
    EXPECT_EQ(first.timings.n_prompt_cached, 0);
    EXPECT_EQ(second.timings.n_prompt_cached, 32);
    EXPECT_EQ(first.generated, second.generated);
    options.reuse_cached_prefix = false;
    EXPECT_EQ(generate(session, prompt, options).timings.n_prompt_cached, 0);
}

TEST(ForkedSequence, ContinuesLikeAnIndependentOneAfterCopyOnWrite) {
    const auto model = testing::tiny_model(tiny_spec("qwen2"));
    auto options = test_session_options(KvDtype::F32);
    options.max_sequences = 3;
    InferenceSession session(model, options);
    const std::vector<TokenId> prompt = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4};  // 20: one block + 4
    const SeqId parent = session.new_sequence();
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], parent, static_cast<int32_t>(i), false});
    session.decode(batch);
    const SeqId child = session.fork_sequence(parent);
    EXPECT_EQ(session.sequence_length(child), 20);
    // Both continue with different tokens in one step; the child's write copies the shared
    // partial block first.
    const std::span<const float> both = session.decode(Batch{{11, parent, 20, true}, {22, child, 20, true}});
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    const std::vector<float> parent_logits(both.begin(), both.begin() + static_cast<std::ptrdiff_t>(n_vocab));
    const std::vector<float> child_logits(both.begin() + static_cast<std::ptrdiff_t>(n_vocab), both.end());

    std::vector<TokenId> with_11 = prompt, with_22 = prompt;
    with_11.push_back(11);
    with_22.push_back(22);
    const auto expected_11 = testing::teacher_forced_logits(session, with_11).back();
    const auto expected_22 = testing::teacher_forced_logits(session, with_22).back();
    EXPECT_LT(testing::relative_row_error(parent_logits, expected_11), 1e-5);
    EXPECT_LT(testing::relative_row_error(child_logits, expected_22), 1e-5);
}

}  // namespace
}  // namespace inferscope

namespace inferscope {
namespace {

struct BatchCase {
    GgmlType weights;
    KvDtype kv;
};

class BatchedDecode : public ::testing::TestWithParam<BatchCase> {};

// Four sequences at different context lengths decoded together, one token each per step
// (one matrix-matrix product per weight for all of them, against one matrix-vector product
// per sequence alone): the same greedy tokens, and logits within 1e-4 of the row's scale.
TEST_P(BatchedDecode, EverySequenceGetsWhatItWouldGetAlone) {
    const BatchCase c = GetParam();
    const auto model = testing::tiny_model(tiny_spec("qwen2", c.weights));
    auto options = test_session_options(c.kv);
    options.max_sequences = 4;
    InferenceSession session(model, options);
    const std::vector<int> prompt_lengths = {3, 9, 17, 30};
    constexpr int kNewTokens = 10;
    std::vector<std::vector<TokenId>> prompts;
    std::vector<testing::GreedyRun> alone;
    for (size_t s = 0; s < prompt_lengths.size(); ++s) {
        std::vector<TokenId> p;
        for (int i = 0; i < prompt_lengths[s]; ++i) p.push_back(static_cast<TokenId>((i * 31 + 7 * s + 2) % 300));
        alone.push_back(testing::greedy_with_cache(session, p, kNewTokens));
        prompts.push_back(std::move(p));
    }

    std::vector<SeqId> seqs;
    std::vector<TokenId> next;
    const auto n_vocab = static_cast<size_t>(model->config().n_vocab);
    for (const auto& p : prompts) {  // prefill each; its last logits give its first token
        seqs.push_back(session.new_sequence());
        Batch batch;
        for (size_t i = 0; i < p.size(); ++i) batch.push_back({p[i], seqs.back(), static_cast<int32_t>(i), i + 1 == p.size()});
        next.push_back(argmax(session.decode(batch)));
    }
    double worst = 0;
    for (int step = 1; step < kNewTokens; ++step) {
        Batch batch;
        for (size_t s = 0; s < seqs.size(); ++s) {
            ASSERT_EQ(next[s], alone[s].ids[static_cast<size_t>(step - 1)]) << "sequence " << s << " step " << step;
            batch.push_back({next[s], seqs[s], session.sequence_length(seqs[s]), true});
        }
        const std::span<const float> flat = session.decode(batch);
        for (size_t s = 0; s < seqs.size(); ++s) {
            const std::vector<float> got(flat.begin() + static_cast<std::ptrdiff_t>(s * n_vocab),
                                         flat.begin() + static_cast<std::ptrdiff_t>((s + 1) * n_vocab));
            const double err = testing::relative_row_error(got, alone[s].logits[static_cast<size_t>(step)]);
            worst = std::max(worst, err);
            EXPECT_LT(err, 1e-4) << "sequence " << s << " step " << step;
            next[s] = argmax(got);
        }
    }
    for (size_t s = 0; s < seqs.size(); ++s) EXPECT_EQ(next[s], alone[s].ids.back()) << "sequence " << s;
    std::printf("[ measured ] %s weights, kv %s: max relative logit difference batched vs alone %.3g\n",
                std::string(ggml_type_name(c.weights)).c_str(), kv_dtype_name(c.kv), worst);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, BatchedDecode,
                         ::testing::Values(BatchCase{GgmlType::F32, KvDtype::F32}, BatchCase{GgmlType::F16, KvDtype::F16},
                                           BatchCase{GgmlType::BF16, KvDtype::F16}, BatchCase{GgmlType::Q8_0, KvDtype::F16},
                                           BatchCase{GgmlType::Q4_0, KvDtype::F16},
                                           BatchCase{GgmlType::IQ4_NL, KvDtype::F16}),
                         [](const ::testing::TestParamInfo<BatchCase>& info) {
                             return std::string(ggml_type_name(info.param.weights)) + "_kv" + kv_dtype_name(info.param.kv);
                         });

}  // namespace
}  // namespace inferscope
