// Applying schemes to a whole model: which matrices, the report, the derived model, progress
// and cancellation, and the expected orderings on weights with planted outliers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/quant/codecs.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

// Rows of 256 and 512 weights, so that every group size up to 256 fits and g128 differs
// from a whole row.
SyntheticModelSpec grouped_spec(std::vector<int> outlier_dims = {}) {
    SyntheticModelSpec s = testing::tiny_spec("llama");
    s.n_embd = 256;
    s.n_head = 8;
    s.n_head_kv = 4;
    s.n_ff = 512;
    s.weight_std = 0.02f;
    s.outlier_dims = std::move(outlier_dims);
    return s;
}

QuantRunOptions quiet_options(int threads = 2) {
    QuantRunOptions o;
    o.n_threads = threads;
    return o;
}

TEST(ModelQuantizer, SelectsTheSevenProjectionsOfEveryLayer) {
    const auto llama = testing::tiny_model(testing::tiny_spec("llama"));
    const auto matrices = quantizable_matrices(*llama, false);
    ASSERT_EQ(matrices.size(), 14u);
    EXPECT_EQ(matrices[0]->name, "blk.0.attn_q.weight");
    EXPECT_EQ(matrices[6]->name, "blk.0.ffn_down.weight");
    EXPECT_EQ(matrices[13]->name, "blk.1.ffn_down.weight");
    const auto with_embeddings = quantizable_matrices(*llama, true);
    ASSERT_EQ(with_embeddings.size(), 16u);
    EXPECT_EQ(with_embeddings[14]->name, "token_embd.weight");
    EXPECT_EQ(with_embeddings[15]->name, "output.weight");
    // qwen2's output is tied to the embedding: it is quantized once.
    EXPECT_EQ(quantizable_matrices(*testing::tiny_model(testing::tiny_spec("qwen2")), true).size(), 15u);
}

TEST(ModelQuantizer, ReportCountsMatricesParametersAndBytes) {
    const SyntheticModelSpec spec = grouped_spec();
    const auto model = testing::tiny_model(spec);
    const std::vector<QuantScheme> schemes = {parse_quant_scheme("int4:g128"), parse_quant_scheme("q8_0")};
    const QuantReport r = analyze_quantization(*model, schemes, quiet_options());
    ASSERT_EQ(r.matrices.size(), 14u);
    const uint64_t q = 256 * 256, kv = 128 * 256, ffn = 512 * 256;
    EXPECT_EQ(r.quantized_parameters, 2 * (2 * q + 2 * kv + 3 * ffn));
    EXPECT_EQ(r.model_parameters, model->parameter_count());
    ASSERT_EQ(r.schemes.size(), 2u);
    EXPECT_DOUBLE_EQ(r.schemes[0].bits_per_weight, 4.125);
    EXPECT_DOUBLE_EQ(r.schemes[1].bits_per_weight, 8.5);
    EXPECT_EQ(r.schemes[0].quantized_bytes, r.quantized_parameters * 4125 / 8000);
    // F32 source: everything else keeps its bytes; the matrices shrink from 32 bits.
    EXPECT_EQ(r.schemes[0].model_bytes, r.reference_bytes - r.quantized_parameters * 4 + r.schemes[0].quantized_bytes);
    EXPECT_EQ(r.matrices[6].name, "blk.0.ffn_down.weight");
    EXPECT_EQ(r.matrices[6].rows, 256);
    EXPECT_EQ(r.matrices[6].cols, 512);
    EXPECT_EQ(r.schemes[0].matrices.size(), 14u);
    double worst = 0, sum = 0;
    for (const MatrixResult& m : r.schemes[0].matrices) {
        worst = std::max(worst, m.error.relative);
        sum += m.error.relative;
        EXPECT_GT(m.error.relative, 0.0);
        EXPECT_GT(m.error.max_abs, 0.0);
    }
    EXPECT_EQ(r.schemes[0].worst_relative_error, worst);
    EXPECT_NEAR(r.schemes[0].mean_relative_error, sum / 14.0, 1e-15);
    EXPECT_LT(r.schemes[1].weighted_relative_error, r.schemes[0].weighted_relative_error);
    EXPECT_FALSE(r.cancelled);
}

TEST(ModelQuantizer, DerivedModelExecutesTheDequantizedWeights) {
    const auto base = testing::tiny_model(grouped_spec());
    const QuantScheme scheme = parse_quant_scheme("int4:g32");
    const QuantizedModel q = quantize_model(base, scheme, quiet_options(3));
    ASSERT_NE(q.model, nullptr);
    EXPECT_TRUE(q.model->has_replaced_weights());
    EXPECT_FALSE(base->has_replaced_weights());
    const WeightMatrix& original = base->layers()[1].w_up;
    const WeightMatrix& replaced = q.model->layers()[1].w_up;
    EXPECT_EQ(replaced.type, GgmlType::F32);
    EXPECT_NE(replaced.data, original.data);
    const auto* w = reinterpret_cast<const float*>(original.data);
    const std::vector<float> expected =
        decode_matrix(scheme, encode_matrix(scheme, w, original.rows, original.cols), original.rows, original.cols);
    EXPECT_EQ(std::memcmp(replaced.data, expected.data(), expected.size() * sizeof(float)), 0);
    // Norms, embeddings and the tokenizer are the base's.
    EXPECT_EQ(q.model->token_embedding().data, base->token_embedding().data);
    EXPECT_EQ(&q.model->tokenizer(), &base->tokenizer());
    EXPECT_EQ(q.model->layers()[0].attn_norm, base->layers()[0].attn_norm);
}

TEST(ModelQuantizer, PackedSchemesKeepTheirBlocksAndRunInASession) {
    const auto base = testing::tiny_model(grouped_spec());
    const QuantizedModel q = quantize_model(base, parse_quant_scheme("q4_0"), quiet_options());
    ASSERT_NE(q.model, nullptr);
    EXPECT_EQ(q.model->layers()[0].wq.type, GgmlType::Q4_0);
    EXPECT_EQ(q.model->layers()[0].wq.row_bytes, 8u * 18u);
    SessionOptions so;
    so.n_threads = 1;
    so.n_ctx = 32;
    InferenceSession session(q.model, so);
    const SeqId seq = session.new_sequence();
    const std::vector<BatchToken> batch = {{5, seq, 0, false}, {9, seq, 1, true}};
    const auto logits = session.decode(batch);
    EXPECT_EQ(logits.size(), static_cast<size_t>(base->config().n_vocab));
}

TEST(ModelQuantizer, ResultsDoNotDependOnTheThreadCount) {
    const auto base = testing::tiny_model(grouped_spec());
    const QuantScheme scheme = parse_quant_scheme("nf4");
    const QuantizedModel one = quantize_model(base, scheme, quiet_options(1));
    const QuantizedModel three = quantize_model(base, scheme, quiet_options(3));
    const WeightMatrix& a = one.model->layers()[0].w_down;
    const WeightMatrix& b = three.model->layers()[0].w_down;
    EXPECT_EQ(std::memcmp(a.data, b.data, a.bytes()), 0);
    EXPECT_NEAR(one.report.schemes[0].weighted_relative_error, three.report.schemes[0].weighted_relative_error, 1e-12);
}

TEST(ModelQuantizer, ProgressIsReportedAndCancellationStopsEarly) {
    const auto base = testing::tiny_model(testing::tiny_spec("llama"));
    QuantRunOptions o = quiet_options();
    std::vector<std::string> seen;
    std::vector<double> fractions;
    o.progress = Progress(
        [&](const ProgressUpdate& u) {
            EXPECT_EQ(u.stage, "quantizing");
            EXPECT_EQ(u.total, 14);
            EXPECT_EQ(u.done, static_cast<int64_t>(seen.size()) + 1);
            seen.emplace_back(u.item);
            fractions.push_back(u.fraction);
        },
        [&] { return seen.size() >= 3; });
    const QuantizedModel q = quantize_model(base, parse_quant_scheme("int8:row"), o);
    EXPECT_TRUE(q.report.cancelled);
    EXPECT_EQ(q.model, nullptr);
    EXPECT_EQ(seen, (std::vector<std::string>{"blk.0.attn_q.weight", "blk.0.attn_k.weight", "blk.0.attn_v.weight"}));
    EXPECT_EQ(fractions, (std::vector<double>{1.0 / 14, 2.0 / 14, 3.0 / 14}));
    EXPECT_EQ(q.report.matrices.size(), 3u);
    EXPECT_EQ(q.report.schemes[0].matrices.size(), 3u);
}

TEST(ModelQuantizer, ShapesAreCheckedBeforeAnyWork) {
    const auto base = testing::tiny_model(testing::tiny_spec("llama"));  // rows of 64 and 96
    QuantRunOptions o = quiet_options();
    int calls = 0;
    o.progress = Progress([&](const ProgressUpdate&) { ++calls; });
    const std::vector<QuantScheme> schemes = {parse_quant_scheme("int8:row"), parse_quant_scheme("int4:g128")};
    try {
        analyze_quantization(*base, schemes, o);
        FAIL() << "expected InvalidArgument";
    } catch (const InvalidArgument& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos) << e.what();
    }
    EXPECT_EQ(calls, 0);
    EXPECT_THROW(quantize_model(base, parse_quant_scheme("q4_k"), o), UnsupportedError);
}

TEST(ModelQuantizer, ReplacingWeightsValidatesNamesAndSizes) {
    const auto base = testing::tiny_model(testing::tiny_spec("llama"));
    EXPECT_THROW(Model::with_replaced_weights(base, {{"blk.9.attn_q.weight", GgmlType::F32, {}}}), InvalidArgument);
    EXPECT_THROW(Model::with_replaced_weights(base, {{"blk.0.attn_q.weight", GgmlType::F32, std::vector<uint8_t>(8)}}),
                 InvalidArgument);
    EXPECT_THROW(Model::with_replaced_weights(base, {{"blk.0.attn_q.weight", GgmlType::Q4_K, {}}}), InvalidArgument);
    // Tied qwen2: replacing the embedding replaces the output projection too.
    const auto qwen = testing::tiny_model(testing::tiny_spec("qwen2"));
    const WeightMatrix& e = qwen->token_embedding();
    std::vector<uint8_t> zeros(e.bytes(), 0);
    const auto derived = Model::with_replaced_weights(qwen, {{"token_embd.weight", GgmlType::F32, zeros}});
    EXPECT_EQ(derived->output().data, derived->token_embedding().data);
    EXPECT_NE(derived->output().data, qwen->output().data);
    // A model derived from a derived model keeps the first replacement alive.
    const auto twice = Model::with_replaced_weights(derived, {});
    EXPECT_EQ(twice->token_embedding().data, derived->token_embedding().data);
}

// The expected orderings on Gaussian weights with planted outliers (make-model
// --outlier-dims scales those rows of every down projection by 40).
TEST(ModelQuantizer, FinerGranularityAndNf4WinOnOutlierWeights) {
    const auto base = testing::tiny_model(grouped_spec({3, 77}));
    const std::vector<QuantScheme> schemes = {parse_quant_scheme("int4:tensor"), parse_quant_scheme("int4:row"),
                                              parse_quant_scheme("int4:g128"), parse_quant_scheme("int4:g64"),
                                              parse_quant_scheme("nf4")};
    const QuantReport r = analyze_quantization(*base, schemes, quiet_options());
    const SchemeSummary &tensor = r.schemes[0], &row = r.schemes[1], &g128 = r.schemes[2], &g64 = r.schemes[3],
                        &nf4 = r.schemes[4];
    EXPECT_GT(tensor.weighted_relative_error, row.weighted_relative_error);
    EXPECT_GT(row.weighted_relative_error, g128.weighted_relative_error);
    EXPECT_GT(tensor.worst_relative_error, row.worst_relative_error);
    EXPECT_GT(row.worst_relative_error, g128.worst_relative_error);
    EXPECT_LT(nf4.weighted_relative_error, g64.weighted_relative_error);
    for (size_t i = 0; i < r.matrices.size(); ++i) {
        SCOPED_TRACE(r.matrices[i].name);
        EXPECT_GT(tensor.matrices[i].error.relative, row.matrices[i].error.relative);
        EXPECT_GT(row.matrices[i].error.relative, g128.matrices[i].error.relative);
    }
    // The outliers show in the statistics of the down projections only.
    EXPECT_GT(r.matrices[6].stats.max_over_std, 10.0);
    EXPECT_GT(r.matrices[6].stats.beyond_k_sigma, 0);
    EXPECT_EQ(r.matrices[0].stats.beyond_k_sigma, 0);
    EXPECT_NE(tensor.worst_matrix.find("ffn_down"), std::string::npos) << tensor.worst_matrix;
}

}  // namespace
}  // namespace inferscope
