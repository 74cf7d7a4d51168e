// Quality of a quantized model against its reference: KL divergence, top-1 agreement and
// perplexity side by side, teacher-forced greedy agreement; and on stories260K, the
// contrast between INT8 per row and INT4 per tensor.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "engine/core/error.h"
#include "engine/eval/perplexity.h"
#include "engine/eval/quality.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

SessionOptions small_session(int n_ctx = 128) {
    SessionOptions o;
    o.n_threads = 2;
    o.n_ctx = n_ctx;
    return o;
}

std::vector<TokenId> pseudo_text(int n, int n_vocab, uint32_t seed) {
    std::vector<TokenId> tokens(static_cast<size_t>(n));
    uint32_t state = seed;
    for (TokenId& t : tokens) {
        state = state * 1664525u + 1013904223u;
        t = static_cast<TokenId>((state >> 8) % static_cast<uint32_t>(n_vocab));
    }
    return tokens;
}

std::shared_ptr<const Model> quantized(const std::shared_ptr<const Model>& base, const char* scheme) {
    QuantRunOptions o;
    o.n_threads = 2;
    return quantize_model(base, parse_quant_scheme(scheme), o).model;
}

TEST(Quality, KlDivergenceOfKnownDistributions) {
    const std::vector<float> p = {0.0f, 0.0f};
    const std::vector<float> q = {0.0f, static_cast<float>(std::log(3.0))};  // softmax: 1/4, 3/4
    EXPECT_NEAR(kl_divergence(p, q), 0.5 * std::log(4.0 / 3.0), 1e-7);
    EXPECT_EQ(kl_divergence(q, q), 0.0);
    // Shifting logits does not change a distribution.
    const std::vector<float> shifted = {5.0f, 5.0f};
    EXPECT_NEAR(kl_divergence(p, shifted), 0.0, 1e-15);
}

TEST(Quality, ComparingAModelWithItselfGivesZeroDivergence) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession a(model, small_session());
    InferenceSession b(model, small_session());
    const std::vector<TokenId> tokens = pseudo_text(200, 300, 1);
    DistributionOptions o;
    o.n_ctx = 64;
    o.n_batch = 24;
    const DistributionComparison c = compare_distributions(a, b, tokens, o);
    EXPECT_EQ(c.n_chunks, 3);
    EXPECT_EQ(c.n_tokens, 3 * 31);
    EXPECT_EQ(c.kl_mean, 0.0);
    EXPECT_EQ(c.kl_p99, 0.0);
    EXPECT_EQ(c.top1_matches, c.n_tokens);
    EXPECT_EQ(c.reference_ppl, c.candidate_ppl);
}

// The side-by-side perplexities are compute_perplexity's numbers for each model.
TEST(Quality, SideBySidePerplexitiesEqualComputePerplexity) {
    const auto base = testing::tiny_model(testing::tiny_spec("qwen2"));
    const auto q4 = quantized(base, "int4:tensor");
    InferenceSession ref(base, small_session());
    InferenceSession cand(q4, small_session());
    const std::vector<TokenId> tokens = pseudo_text(256, 300, 2);
    DistributionOptions o;
    o.n_ctx = 64;
    o.n_batch = 64;
    const DistributionComparison c = compare_distributions(ref, cand, tokens, o);
    PerplexityOptions p;
    p.n_ctx = 64;
    EXPECT_EQ(c.reference_ppl, compute_perplexity(ref, tokens, p).ppl);
    const PerplexityResult cand_ppl = compute_perplexity(cand, tokens, p);
    EXPECT_EQ(c.candidate_ppl, cand_ppl.ppl);
    EXPECT_EQ(c.candidate_ppl_stderr, cand_ppl.ppl_stderr);
    EXPECT_GT(c.kl_mean, 0.0);
    EXPECT_GE(c.kl_p99, c.kl_mean * 0.5);
    EXPECT_GE(c.kl_max, c.kl_p99);
    EXPECT_LE(c.top1_matches, c.n_tokens);
    // Sessions are left empty for the next user.
    EXPECT_EQ(ref.kv_cache().tokens_in_use(), 0);
    EXPECT_EQ(cand.kv_cache().tokens_in_use(), 0);
}

TEST(Quality, FinerSchemesDivergeLess) {
    const auto base = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession ref(base, small_session());
    const std::vector<TokenId> tokens = pseudo_text(128, 300, 3);
    DistributionOptions o;
    o.n_ctx = 64;
    auto kl_of = [&](const char* scheme) {
        InferenceSession cand(quantized(base, scheme), small_session());
        return compare_distributions(ref, cand, tokens, o).kl_mean;
    };
    const double int8 = kl_of("int8:row");
    const double int4 = kl_of("int4:row");
    const double int2 = kl_of("int2:tensor");
    EXPECT_LT(int8, int4);
    EXPECT_LT(int4, int2);
}

TEST(Quality, CancellingAComparisonKeepsTheChunksDone) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession a(model, small_session());
    InferenceSession b(model, small_session());
    DistributionOptions o;
    o.n_ctx = 32;
    int64_t chunks_done = 0;
    o.progress = Progress([&](const ProgressUpdate& u) { chunks_done = u.done; }, [&] { return chunks_done >= 2; });
    const DistributionComparison c = compare_distributions(a, b, pseudo_text(160, 300, 4), o);
    EXPECT_TRUE(c.cancelled);
    EXPECT_EQ(c.n_chunks, 2);
    EXPECT_EQ(c.n_tokens, 2 * 15);
}

TEST(Quality, BadComparisonsAreRejected) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    SyntheticModelSpec other_spec = testing::tiny_spec("llama");
    other_spec.n_vocab = 320;
    const auto other = testing::tiny_model(other_spec);
    InferenceSession a(model, small_session());
    InferenceSession b(other, small_session());
    DistributionOptions o;
    o.n_ctx = 32;
    EXPECT_THROW(compare_distributions(a, b, pseudo_text(64, 300, 5), o), InvalidArgument);
    InferenceSession c(model, small_session());
    EXPECT_THROW(compare_distributions(a, c, pseudo_text(40, 300, 5), o), InvalidArgument);  // < 2 x n_ctx
    const std::vector<std::vector<TokenId>> prompts = {pseudo_text(100, 300, 6)};
    EXPECT_THROW(greedy_agreement(a, c, prompts, 40), InvalidArgument);  // 140 > 128
    EXPECT_THROW(greedy_agreement(a, c, prompts, 0), InvalidArgument);
}

TEST(Quality, GreedyAgreementCountsTeacherForcedMatches) {
    const auto base = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession ref(base, small_session());
    InferenceSession same(base, small_session());
    const std::vector<std::vector<TokenId>> prompts = {pseudo_text(5, 300, 7), pseudo_text(9, 300, 8),
                                                       pseudo_text(1, 300, 9)};
    const AgreementResult self = greedy_agreement(ref, same, prompts, 12);
    EXPECT_EQ(self.positions, 36);
    EXPECT_EQ(self.matches, 36);
    EXPECT_EQ(self.matches_per_prompt, (std::vector<int>{12, 12, 12}));
    // A model with different weights agrees far less often than INT8. (llama: an untied
    // output, so a random model does not simply repeat its input token.)
    SyntheticModelSpec stranger_spec = testing::tiny_spec("llama");
    stranger_spec.seed = 99;
    InferenceSession stranger(testing::tiny_model(stranger_spec), small_session());
    InferenceSession int8(quantized(base, "int8:row"), small_session());
    const AgreementResult far = greedy_agreement(ref, stranger, prompts, 12);
    const AgreementResult near = greedy_agreement(ref, int8, prompts, 12);
    EXPECT_LT(far.matches, near.matches);
    EXPECT_GE(near.matches, 30);
    EXPECT_DOUBLE_EQ(near.agreement(), static_cast<double>(near.matches) / 36.0);
}

// stories260K on the first 8 KiB of the GPL (the text of the llama.cpp perplexity
// reference): INT8 per row stays within 1 % of the reference, INT4 per tensor collapses.
TEST(Quality, Stories260KInt8RowHoldsAndInt4TensorCollapses) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::optional<std::string> text = testing::read_file_prefix(testing::kGplTextPath, 8192);
    if (!text) GTEST_SKIP() << testing::kGplTextPath << " is missing (Debian's base-files provides it)";
    const auto base = Model::load(testing::shared_model("stories260K.gguf").string());
    const std::vector<TokenId> tokens = base->tokenizer().encode(*text, true, false);
    InferenceSession ref(base, small_session(256));
    DistributionOptions o;
    o.n_ctx = 256;
    InferenceSession int8(quantized(base, "int8:row"), small_session(256));
    const DistributionComparison good = compare_distributions(ref, int8, tokens, o);
    InferenceSession int4(quantized(base, "int4:tensor"), small_session(256));
    const DistributionComparison bad = compare_distributions(ref, int4, tokens, o);
    // llama-perplexity's number for this text and context (shared/models/reference).
    EXPECT_NEAR(good.reference_ppl, 85.1628, 0.01);
    EXPECT_LT(std::fabs(good.candidate_ppl / good.reference_ppl - 1.0), 0.01) << good.candidate_ppl;
    EXPECT_GT(bad.candidate_ppl, 1.5 * bad.reference_ppl) << bad.candidate_ppl;
    EXPECT_GT(good.top1_agreement, 0.95);
    EXPECT_LT(bad.top1_agreement, 0.5);
    EXPECT_GT(bad.kl_mean, 100 * good.kl_mean);
}

}  // namespace
}  // namespace inferscope
