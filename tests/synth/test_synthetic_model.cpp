// Synthetic and built-in models: every small preset builds a model whose header says what the
// spec asked for, the seed alone decides the weights, bad names and shapes are clear errors,
// and the built-in models are named and loaded by their "builtin:" paths.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/model/model.h"
#include "engine/synth/builtin_models.h"
#include "engine/synth/synthetic_model.h"

namespace inferscope {
namespace {

std::shared_ptr<const Model> build(const SyntheticModelSpec& spec) {
    return Model::from_gguf(GgufFile::from_bytes(build_synthetic_model(spec).to_bytes(), spec.name + ".gguf"));
}

TEST(SyntheticModel, EverySmallPresetLoadsWithTheShapeItNames) {
    for (const std::string_view name : {"default", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"}) {
        SCOPED_TRACE(std::string(name));
        const SyntheticModelSpec spec = synthetic_preset(name);
        const auto model = build(spec);
        const ModelConfig& c = model->config();
        EXPECT_EQ(c.architecture, spec.architecture);
        EXPECT_EQ(c.n_layer, spec.n_layer);
        EXPECT_EQ(c.n_embd, spec.n_embd);
        EXPECT_EQ(c.n_head, spec.n_head);
        EXPECT_EQ(c.n_head_kv, spec.n_head_kv);
        EXPECT_EQ(c.head_dim, spec.head_dim > 0 ? spec.head_dim : spec.n_embd / spec.n_head);
        EXPECT_EQ(c.n_ff, spec.n_ff);
        EXPECT_EQ(c.n_vocab, spec.n_vocab);
        EXPECT_EQ(c.context_length, spec.context_length);
        EXPECT_EQ(c.tied_output, spec.tied_output);
        EXPECT_TRUE(model->file().get_bool("inferscope.synthetic", false));
    }
}

TEST(SyntheticModel, GemmaPresetsMarkEveryNthLayerGlobal) {
    const SyntheticModelSpec spec = synthetic_preset("tiny-gemma3");
    const auto model = build(spec);
    const ModelConfig& c = model->config();
    ASSERT_EQ(static_cast<int>(c.local_layers.size()), c.n_layer);
    for (int layer = 0; layer < c.n_layer; ++layer) {
        EXPECT_EQ(c.is_local_layer(layer), (layer + 1) % spec.sliding_window_pattern != 0) << "layer " << layer;
    }
    EXPECT_EQ(c.sliding_window, spec.sliding_window);
}

TEST(SyntheticModel, TheSeedAloneDecidesTheWeights) {
    SyntheticModelSpec spec = synthetic_preset("tiny-qwen2");
    const std::vector<uint8_t> first = build_synthetic_model(spec).to_bytes();
    EXPECT_EQ(build_synthetic_model(spec).to_bytes(), first);
    const auto model = build(spec);
    spec.seed += 1;
    const auto reseeded = build(spec);
    const WeightMatrix& a = model->layers()[0].w_down;
    const WeightMatrix& b = reseeded->layers()[0].w_down;
    ASSERT_EQ(a.bytes(), b.bytes());
    EXPECT_NE(std::memcmp(a.data, b.data, a.bytes()), 0);
}

// An eight-layer model of `mix` (base: its Q4_K or Q5_K): use_more_bits picks layers 0 (the
// first eighth), 3 and 6 (every third from the eighth on) and 7 (the last eighth) for Q6_K
// attn_v and ffn_down; the output is Q6_K (the embeddings where tied), the rest `base`.
void expect_mix_of_eight_layers(KQuantMix mix, GgmlType base, bool tied_output, uint64_t llama_file_type) {
    SyntheticModelSpec spec = synthetic_preset("default");
    spec.n_layer = 8;
    spec.n_embd = 256;
    spec.n_ff = 768;
    spec.tied_output = tied_output;
    spec.k_quant_mix = mix;
    const auto model = build(spec);
    EXPECT_EQ(model->file().get_u64("general.file_type"), llama_file_type);
    EXPECT_EQ(model->token_embedding().type, tied_output ? GgmlType::Q6_K : base);
    if (!tied_output) EXPECT_EQ(model->output().type, GgmlType::Q6_K);
    for (int l = 0; l < spec.n_layer; ++l) {
        const LayerWeights& w = model->layers()[static_cast<size_t>(l)];
        const GgmlType more = l == 0 || l == 3 || l == 6 || l == 7 ? GgmlType::Q6_K : base;
        EXPECT_EQ(w.wv.type, more) << "layer " << l;
        EXPECT_EQ(w.w_down.type, more) << "layer " << l;
        for (const WeightMatrix* m : {&w.wq, &w.wk, &w.wo, &w.w_gate, &w.w_up}) EXPECT_EQ(m->type, base) << m->name;
    }
}

TEST(SyntheticModel, TheQ4KMMixChoosesTypesAsLlamaCppsQ4KM) {
    expect_mix_of_eight_layers(KQuantMix::Q4_K_M, GgmlType::Q4_K, false, 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
}

TEST(SyntheticModel, TheQ5KMMixChoosesTypesAsLlamaCppsQ5KM) {
    expect_mix_of_eight_layers(KQuantMix::Q5_K_M, GgmlType::Q5_K, true, 17);  // LLAMA_FTYPE_MOSTLY_Q5_K_M
}

TEST(SyntheticModel, KQuantMixesFallBackWhere256DoesNotDivideARow) {
    // Rows of 896 (Qwen2.5-0.5B's width): Q5_0 / Q5_1 for the base, Q8_0 for Q6_K. Q5_K_M's q/k/v
    // then read inputs encoded as Q8_1 beside Q8_0.
    struct Case {
        KQuantMix mix;
        const char* tensor;
        int layer, cols;
        bool tied;
        GgmlType expected;
    };
    constexpr KQuantMix kQ4 = KQuantMix::Q4_K_M, kQ5 = KQuantMix::Q5_K_M;
    const std::vector<Case> cases = {{kQ4, "attn_q", 0, 896, true, GgmlType::Q5_0},
                                     {kQ4, "attn_v", 5, 896, true, GgmlType::Q8_0},
                                     {kQ4, "attn_v", 4, 896, true, GgmlType::Q5_0},
                                     {kQ4, "token_embd", -1, 896, true, GgmlType::Q8_0},  // tied: the output's type
                                     {kQ4, "token_embd", -1, 896, false, GgmlType::Q5_0},
                                     {kQ4, "ffn_down", 21, 4864, true, GgmlType::Q6_K},
                                     {kQ4, "ffn_down", 20, 4864, true, GgmlType::Q6_K},
                                     {kQ4, "ffn_down", 19, 4864, true, GgmlType::Q4_K},
                                     {kQ5, "attn_q", 0, 896, true, GgmlType::Q5_1},
                                     {kQ5, "attn_v", 5, 896, true, GgmlType::Q8_0},
                                     {kQ5, "attn_v", 4, 896, true, GgmlType::Q5_1},
                                     {kQ5, "token_embd", -1, 896, false, GgmlType::Q5_1},
                                     {kQ5, "ffn_down", 19, 4864, true, GgmlType::Q5_K}};
    for (const Case& c : cases) {
        EXPECT_EQ(k_quant_mix_type(c.mix, c.tensor, c.layer, 24, c.cols, c.tied), c.expected)
            << k_quant_mix_traits(c.mix).name << " " << c.tensor << " of layer " << c.layer << ", rows of " << c.cols;
    }
}

TEST(SyntheticModel, KQuantMixesAreFoundByMakeModelsNames) {
    ASSERT_NE(k_quant_mix_named("q4_k_m"), nullptr);
    EXPECT_EQ(k_quant_mix_named("q4_k_m")->mix, KQuantMix::Q4_K_M);
    ASSERT_NE(k_quant_mix_named("q5_k_m"), nullptr);
    EXPECT_EQ(k_quant_mix_named("q5_k_m")->base, GgmlType::Q5_K);
    EXPECT_EQ(k_quant_mix_named("q5_k"), nullptr);  // a type, not a mix
    EXPECT_THROW(k_quant_mix_traits(KQuantMix::None), InvalidArgument);
}

TEST(SyntheticModel, AnUnknownPresetListsTheNames) {
    try {
        synthetic_preset("qwen9");
        FAIL() << "an unknown preset was accepted";
    } catch (const InvalidArgument& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("unknown preset \"qwen9\""), std::string::npos) << message;
        for (const std::string_view name : synthetic_preset_names()) {
            EXPECT_NE(message.find(std::string(name)), std::string::npos) << name;
        }
    }
}

TEST(SyntheticModel, InconsistentShapesAreRefused) {
    SyntheticModelSpec spec = synthetic_preset("tiny-qwen2");
    spec.n_head_kv = 3;  // does not divide the query heads
    EXPECT_THROW(build_synthetic_model(spec), InvalidArgument);
}

TEST(BuiltinModels, PathsNameThemAndUnknownNamesAreErrors) {
    for (const BuiltinModel model : {BuiltinModel::Stories260K, BuiltinModel::Synthetic}) {
        EXPECT_EQ(builtin_model_named(builtin_model_path(model)), model);
        EXPECT_FALSE(builtin_model_label(model).empty());
    }
    EXPECT_EQ(builtin_model_named("models/stories260K.gguf"), std::nullopt);
    EXPECT_THROW(builtin_model_named("builtin:nothing"), InvalidArgument);
}

TEST(BuiltinModels, Stories260KLoadsFromTheLinkedBytes) {
    EXPECT_GT(stories260k_gguf_bytes().size(), 0u);
    const auto stories = load_builtin_model(BuiltinModel::Stories260K);
    EXPECT_EQ(stories->config().architecture, "llama");
    EXPECT_GT(stories->config().n_vocab, 0);
    const auto synthetic = load_builtin_model(BuiltinModel::Synthetic);
    EXPECT_TRUE(synthetic->file().get_bool("inferscope.synthetic", false));
}

}  // namespace
}  // namespace inferscope
