// INT8 activations in the linear layers (engine/backend/activation_precision.h): parsing,
// the quantized product against a naive reference for each mode, LLM.int8()'s
// decomposition with a planted outlier column, and quality runs on stories260K.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>

#include "engine/backend/activation_precision.h"
#include "engine/backend/cpu/activation_quant.h"
#include "engine/backend/cpu/matmul.h"
#include "engine/core/error.h"
#include "engine/eval/quality.h"
#include "engine/runtime/session.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

constexpr int64_t kTokens = 6;
constexpr int64_t kCols = 40;
constexpr int64_t kRows = 24;
constexpr int64_t kOutlierCol = 17;

std::vector<float> random_values(int64_t count, float stddev, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, stddev);
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = normal(rng);
    return v;
}

WeightMatrix f32_matrix(const std::vector<float>& values, int64_t rows, int64_t cols) {
    WeightMatrix w;
    w.name = "test.weight";
    w.type = GgmlType::F32;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = static_cast<uint64_t>(cols) * sizeof(float);
    w.data = reinterpret_cast<const uint8_t*>(values.data());
    return w;
}

// --- the naive reference, written out here with plain loops --------------------------------

// Symmetric absmax INT8 code: round half away from zero, clamp to +-127.
int naive_code(double x, double scale) {
    if (scale == 0.0) return 0;
    return static_cast<int>(std::clamp(std::round(x / scale), -127.0, 127.0));
}

// y[t][r] = sum over columns of x_hat[t][c] * w[r][c] in double, where x_hat is x as the mode
// sees it; LLM.int8()'s y is the F32 partial product of the outlier columns plus the
// per-token INT8 product of the rest, computed as integer sums scaled once.
std::vector<double> naive_product(const ActivationPrecision& p, const std::vector<float>& x, const std::vector<float>& w) {
    std::vector<bool> outlier(kCols, false);
    if (p.mode == ActivationMode::LlmInt8) {
        for (int64_t t = 0; t < kTokens; ++t)
            for (int64_t c = 0; c < kCols; ++c)
                if (std::fabs(x[t * kCols + c]) > p.outlier_threshold) outlier[c] = true;
    }
    double tensor_max = 0;
    for (float v : x) tensor_max = std::max(tensor_max, static_cast<double>(std::fabs(v)));
    std::vector<double> y(kTokens * kRows, 0.0);
    for (int64_t t = 0; t < kTokens; ++t) {
        double row_max = 0;
        for (int64_t c = 0; c < kCols; ++c)
            if (!outlier[c]) row_max = std::max(row_max, static_cast<double>(std::fabs(x[t * kCols + c])));
        const double scale = static_cast<float>((p.mode == ActivationMode::Int8Tensor ? tensor_max : row_max) / 127.0);
        for (int64_t r = 0; r < kRows; ++r) {
            double exact_part = 0, int8_part = 0;
            for (int64_t c = 0; c < kCols; ++c) {
                const double xv = x[t * kCols + c], wv = w[r * kCols + c];
                if (p.mode == ActivationMode::F32 || outlier[c]) {
                    exact_part += xv * wv;
                } else {
                    int8_part += naive_code(xv, scale) * wv;
                }
            }
            y[t * kRows + r] = exact_part + scale * int8_part;
        }
    }
    return y;
}

// The engine's product: the backend's activation step, then its matmul.
std::vector<float> engine_product(const ActivationPrecision& p, const std::vector<float>& x, const std::vector<float>& w,
                                  ActivationQuantScratch& activation_scratch) {
    ThreadPool pool(2);
    MatmulScratch scratch;
    std::vector<float> y(kTokens * kRows);
    const float* input = quantize_activations(p, x.data(), kTokens, kCols, activation_scratch);
    matmul(f32_matrix(w, kRows, kCols), input, kTokens, y.data(), pool, scratch);
    return y;
}

double relative_error(const std::vector<float>& y, const std::vector<double>& exact) {
    double err = 0, norm = 0;
    for (size_t i = 0; i < y.size(); ++i) {
        err += (y[i] - exact[i]) * (y[i] - exact[i]);
        norm += exact[i] * exact[i];
    }
    return std::sqrt(err / norm);
}

std::vector<float> with_planted_outlier(std::vector<float> x, float value) {
    for (int64_t t = 0; t < kTokens; t += 2) x[t * kCols + kOutlierCol] = t % 4 == 0 ? value : -value;
    return x;
}

TEST(ActivationPrecision, ParsesAndNamesEveryMode) {
    EXPECT_TRUE(parse_activation_precision("f32").is_f32());
    EXPECT_EQ(parse_activation_precision("int8:tensor").mode, ActivationMode::Int8Tensor);
    EXPECT_EQ(parse_activation_precision("INT8:Token").mode, ActivationMode::Int8Token);
    const ActivationPrecision llm = parse_activation_precision("llm.int8");
    EXPECT_EQ(llm.mode, ActivationMode::LlmInt8);
    EXPECT_EQ(llm.outlier_threshold, 6.0f);
    EXPECT_EQ(parse_activation_precision("llm.int8:2.5").outlier_threshold, 2.5f);
    for (const char* text : {"f32", "int8:tensor", "int8:token", "llm.int8:6", "llm.int8:2.5", "llm.int8:0.1"}) {
        EXPECT_EQ(activation_precision_name(parse_activation_precision(text)), text);
    }
    for (const char* bad : {"", "int8", "int4:tensor", "int8:row", "llm.int8:", "llm.int8:-1", "llm.int8:0",
                            "llm.int8:abc", "llm.int8:6x", "llm.int8x", "llm.int8:inf"}) {
        EXPECT_THROW(parse_activation_precision(bad), InvalidArgument) << bad;
    }
}

TEST(ActivationPrecision, F32ReturnsTheInputUntouched) {
    const std::vector<float> x = random_values(kTokens * kCols, 1.0f, 1);
    ActivationQuantScratch scratch;
    EXPECT_EQ(quantize_activations({}, x.data(), kTokens, kCols, scratch), x.data());
    EXPECT_TRUE(scratch.values.empty());
}

TEST(ActivationPrecision, QuantizedProductMatchesNaiveReferenceForEveryMode) {
    const std::vector<float> x = with_planted_outlier(random_values(kTokens * kCols, 1.5f, 2), 9.0f);
    const std::vector<float> w = random_values(kRows * kCols, 0.2f, 3);
    for (const char* text : {"f32", "int8:tensor", "int8:token", "llm.int8", "llm.int8:2"}) {
        const ActivationPrecision p = parse_activation_precision(text);
        ActivationQuantScratch scratch;
        const std::vector<float> y = engine_product(p, x, w, scratch);
        const std::vector<double> expected = naive_product(p, x, w);
        for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 2e-5 * (1 + std::fabs(expected[i]))) << text << " " << i;
    }
    // The modes differ from F32 and from each other on this input.
    ActivationQuantScratch s;
    const std::vector<float> exact = engine_product({}, x, w, s);
    EXPECT_NE(engine_product(parse_activation_precision("int8:tensor"), x, w, s), exact);
    EXPECT_NE(engine_product(parse_activation_precision("int8:token"), x, w, s), exact);
    EXPECT_NE(engine_product(parse_activation_precision("int8:token"), x, w, s),
              engine_product(parse_activation_precision("int8:tensor"), x, w, s));
}

TEST(ActivationPrecision, HandQuantizedValues) {
    // One token, columns {0.26, -0.5, 1.0, 60.0}: tensor scale 60/127 puts 0.26 on code 1
    // (0.4724...), -0.5 on -1; llm.int8 keeps 60 exact and quantizes the rest with 1.0/127.
    const std::vector<float> x = {0.26f, -0.5f, 1.0f, 60.0f};
    ActivationQuantScratch scratch;
    const float* t = quantize_activations(parse_activation_precision("int8:tensor"), x.data(), 1, 4, scratch);
    const float tensor_scale = 60.0f / 127.0f;
    EXPECT_EQ(t[0], 1.0f * tensor_scale);
    EXPECT_EQ(t[1], -1.0f * tensor_scale);
    EXPECT_EQ(t[2], 2.0f * tensor_scale);
    EXPECT_EQ(t[3], 127.0f * tensor_scale);
    const float* l = quantize_activations(parse_activation_precision("llm.int8"), x.data(), 1, 4, scratch);
    const float rest_scale = 1.0f / 127.0f;
    EXPECT_EQ(scratch.outlier_columns, 1);
    EXPECT_EQ(l[0], 33.0f * rest_scale);  // 0.26 * 127 = 33.02
    EXPECT_EQ(l[1], -64.0f * rest_scale);  // -63.5 rounds away from zero
    EXPECT_EQ(l[2], 127.0f * rest_scale);
    EXPECT_EQ(l[3], 60.0f);
    // A row of zeros has scale 0 and stays 0.
    const std::vector<float> zeros(8, 0.0f);
    const float* z = quantize_activations(parse_activation_precision("int8:token"), zeros.data(), 2, 4, scratch);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(z[i], 0.0f);
}

TEST(ActivationPrecision, LlmInt8RecoversWhatAPlantedOutlierCostsTensorWideInt8) {
    const std::vector<float> x = with_planted_outlier(random_values(kTokens * kCols, 0.5f, 4), 60.0f);
    const std::vector<float> w = random_values(kRows * kCols, 0.2f, 5);
    const std::vector<double> exact = naive_product({}, x, w);
    ActivationQuantScratch scratch;
    const double tensor_error = relative_error(engine_product(parse_activation_precision("int8:tensor"), x, w, scratch), exact);
    const double llm_error = relative_error(engine_product(parse_activation_precision("llm.int8"), x, w, scratch), exact);
    EXPECT_EQ(scratch.outlier_columns, 1);
    EXPECT_GT(tensor_error, 1e-2);
    EXPECT_LT(llm_error, tensor_error / 20) << llm_error << " vs " << tensor_error;
    // The outlier column is the F32 product: with weights only in that column, y = x * w exactly.
    std::vector<float> outlier_only(kRows * kCols, 0.0f);
    for (int64_t r = 0; r < kRows; ++r) outlier_only[r * kCols + kOutlierCol] = w[r * kCols + kOutlierCol];
    const std::vector<float> y = engine_product(parse_activation_precision("llm.int8"), x, outlier_only, scratch);
    for (int64_t t = 0; t < kTokens; ++t) {
        for (int64_t r = 0; r < kRows; ++r) {
            EXPECT_EQ(y[t * kRows + r], x[t * kCols + kOutlierCol] * w[r * kCols + kOutlierCol]) << t << "," << r;
        }
    }
}

TEST(ActivationPrecision, ThresholdAboveEveryValueIsPerTokenInt8) {
    const std::vector<float> x = with_planted_outlier(random_values(kTokens * kCols, 1.0f, 6), 60.0f);
    const std::vector<float> w = random_values(kRows * kCols, 0.2f, 7);
    ActivationQuantScratch scratch;
    const std::vector<float> per_token = engine_product(parse_activation_precision("int8:token"), x, w, scratch);
    const std::vector<float> llm = engine_product(parse_activation_precision("llm.int8:60"), x, w, scratch);
    EXPECT_EQ(scratch.outlier_columns, 0);  // |x| = 60 does not exceed 60
    EXPECT_EQ(llm, per_token);
}

TEST(ActivationPrecision, SessionAppliesThePrecisionToItsBackend) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    SessionOptions o;
    o.n_threads = 2;
    o.n_ctx = 64;
    InferenceSession f32(model, o);
    o.activation_precision = parse_activation_precision("int8:tensor");
    InferenceSession int8(model, o);
    std::vector<TokenId> prompt = {1, 40, 77, 120, 5, 9};
    auto logits_of = [&](InferenceSession& s) {
        ScopedSequence seq(s);
        Batch batch;
        for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], seq.id(), static_cast<int32_t>(i), i + 1 == prompt.size()});
        const auto logits = s.decode(batch);
        return std::vector<float>(logits.begin(), logits.end());
    };
    const std::vector<float> a = logits_of(f32);
    const std::vector<float> b = logits_of(int8);
    EXPECT_NE(a, b);
    double max_diff = 0;
    for (size_t i = 0; i < a.size(); ++i) max_diff = std::max(max_diff, static_cast<double>(std::fabs(a[i] - b[i])));
    EXPECT_LT(max_diff, 0.5);  // INT8 activations perturb, they do not destroy
}

// A synthetic model whose planted residual outliers reach the linear layers' inputs: one
// tensor-wide scale costs more than per-token scales, and LLM.int8() recovers most of it.
TEST(ActivationPrecision, PlantedOutliersHurtTensorWideInt8AndLlmInt8Recovers) {
    auto kl_of = [](const char* precision) {
        SyntheticModelSpec spec = testing::tiny_spec("llama");
        spec.outlier_dims = {5};
        spec.outliers_reach_linear_inputs = true;
        const auto model = testing::tiny_model(spec);
        SessionOptions o;
        o.n_threads = 2;
        o.n_ctx = 64;
        InferenceSession reference(model, o);
        o.activation_precision = parse_activation_precision(precision);
        InferenceSession candidate(model, o);
        std::vector<TokenId> tokens(192);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<TokenId>((i * 37 + 11) % 300);
        DistributionOptions d;
        d.n_ctx = 64;
        return compare_distributions(reference, candidate, tokens, d).kl_mean;
    };
    const double tensor = kl_of("int8:tensor");
    const double token = kl_of("int8:token");
    const double llm = kl_of("llm.int8");
    EXPECT_GT(tensor, 2 * token);
    EXPECT_LT(llm, tensor / 3);
    EXPECT_LT(llm, token);
    std::printf("KL mean: int8:tensor %.3g, int8:token %.3g, llm.int8 %.3g\n", tensor, token, llm);
}

// stories260K on the first 8 KiB of the GPL with each activation precision: every
// perplexity is finite, and F32 activations equal the reference bit for bit.
TEST(ActivationPrecision, Stories260KQualityForEveryMode) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::optional<std::string> text = testing::read_file_prefix(testing::kGplTextPath, 8192);
    if (!text) GTEST_SKIP() << testing::kGplTextPath << " is missing (Debian's base-files provides it)";
    const auto model = Model::load(testing::shared_model("stories260K.gguf").string());
    const std::vector<TokenId> tokens = model->tokenizer().encode(*text, true, false);
    SessionOptions o;
    o.n_threads = 2;
    o.n_ctx = 256;
    InferenceSession reference(model, o);
    DistributionOptions d;
    d.n_ctx = 256;
    for (const char* text_mode : {"f32", "int8:tensor", "int8:token", "llm.int8"}) {
        o.activation_precision = parse_activation_precision(text_mode);
        InferenceSession candidate(model, o);
        const DistributionComparison c = compare_distributions(reference, candidate, tokens, d);
        EXPECT_TRUE(std::isfinite(c.candidate_ppl)) << text_mode;
        EXPECT_GT(c.candidate_ppl, 1.0) << text_mode;
        if (o.activation_precision.is_f32()) {
            EXPECT_EQ(c.candidate_ppl, c.reference_ppl);
            EXPECT_EQ(c.kl_max, 0.0);
            EXPECT_EQ(c.top1_matches, c.n_tokens);
        } else {
            EXPECT_GT(c.kl_mean, 0.0) << text_mode;
            EXPECT_GT(c.top1_agreement, 0.8) << text_mode;
        }
    }
}

}  // namespace
}  // namespace inferscope
