// The whole forward pass on the Vulkan backend against the CPU backend and llama.cpp's
// reference outputs: greedy generation, teacher-forced logits, batches of sequences,
// forked sequences (copy-on-write of KV blocks) and batches split into several passes.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/formats/quant.h"
#include "gpu/vulkan_backend_factory.h"
#include "gpu_greedy.h"
#include "gpu_test_util.h"
#include "support/engine_helpers.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

using testing::expect_greedy_equal;
using testing::max_abs_diff;
using testing::shared_model;
using testing::synthetic_prompt;

std::unique_ptr<Backend> vulkan(const std::shared_ptr<const Model>& model, int max_pass_tokens = 0,
                                std::optional<bool> integer_dot = std::nullopt) {
    gpu::VulkanBackendOptions options;
    options.validation = true;
    options.max_pass_tokens = max_pass_tokens;
    options.integer_dot = integer_dot;
    return gpu::make_vulkan_backend(model, options);
}

class GpuModel : public ::testing::Test {
protected:
    // The GPU session for `file` (skipping, with the reason, without the file or a device).
    void open(const std::string& file, KvDtype kv, int max_pass_tokens = 0, std::optional<bool> integer_dot = std::nullopt) {
        open(Model::load(shared_model(file).string()), kv, max_pass_tokens, integer_dot);
    }
    void open(std::shared_ptr<const Model> model, KvDtype kv, int max_pass_tokens = 0,
              std::optional<bool> integer_dot = std::nullopt) {
        model_ = std::move(model);
        std::unique_ptr<Backend> backend;
        INFERSCOPE_MAKE_OR_SKIP_GPU(backend, vulkan(model_, max_pass_tokens, integer_dot));
        gpu_ = std::make_unique<InferenceSession>(model_, testing::test_session_options(kv), std::move(backend));
        cpu_ = std::make_unique<InferenceSession>(model_, testing::test_session_options(kv));
    }
    void TearDown() override {
        if (gpu_) {
            EXPECT_EQ(gpu::vulkan_validation_errors(gpu_->backend()), 0) << "Vulkan validation errors (printed above)";
        }
    }

    std::shared_ptr<const Model> model_;
    std::unique_ptr<InferenceSession> gpu_, cpu_;
};

nlohmann::json reference(const std::string& file) {
    std::ifstream in(shared_model("reference/" + file));
    return nlohmann::json::parse(in);
}

TEST_F(GpuModel, Stories260KGreedy64EqualsCpuAndLlamaCpp) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const nlohmann::json ref = reference("stories260K.json");
    const auto expected = ref["greedy"]["ids"].get<std::vector<TokenId>>();
    const auto prompt = ref["prompt_ids"].get<std::vector<TokenId>>();
    for (KvDtype kv : {KvDtype::F32, KvDtype::F16}) {
        open("stories260K.gguf", kv);
        if (!gpu_) return;
        const auto ours = testing::greedy_with_cache(*gpu_, prompt, static_cast<int>(expected.size()));
        EXPECT_EQ(ours.ids, expected) << "KV " << kv_dtype_name(kv);
        EXPECT_EQ(ours.ids, testing::greedy_with_cache(*cpu_, prompt, static_cast<int>(expected.size())).ids);
    }
}

TEST_F(GpuModel, Qwen2TinyTeacherForcedLogitsMatchCpu) {
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny.gguf");
    open("qwen2-tiny.gguf", KvDtype::F32);
    if (!gpu_) return;
    const auto prompt = reference("qwen2-tiny.json")["prompt_ids"].get<std::vector<TokenId>>();
    const auto ours = testing::teacher_forced_logits(*gpu_, prompt);
    const auto cpu = testing::teacher_forced_logits(*cpu_, prompt);
    float worst = 0;
    for (size_t i = 0; i < prompt.size(); ++i) worst = std::max(worst, max_abs_diff(ours[i], cpu[i]));
    // The tolerance of the CPU suite against llama.cpp for this F32 model (logits are O(2)).
    EXPECT_LE(worst, 1e-4);
    std::printf("[ measured ] qwen2-tiny F32: max |logit GPU - CPU| = %.3g\n", worst);
}

// The CPU encodes the input of each product with a quantized weight to 8 bits (as llama.cpp's CPU
// backend does; Q8_0 for Q8_0 weights). So does the GPU where it has integer dot products (vulkan_encodes_quantized_inputs);
// otherwise it multiplies the dequantized weights with F32 inputs, and such a GPU's arithmetic is
// checked against the CPU running the same weights dequantized to F32. F16 and BF16 weights stay:
// both backends round their input to F16 or BF16 always.
std::shared_ptr<const Model> dequantized_to_f32(const std::shared_ptr<const Model>& model, bool halves_too = false) {
    std::vector<ReplacementWeight> replacements;
    auto add = [&](const WeightMatrix& w) {
        if (w.type == GgmlType::F32 || (!halves_too && (w.type == GgmlType::F16 || w.type == GgmlType::BF16))) return;
        ReplacementWeight r{w.name, GgmlType::F32, std::vector<uint8_t>(static_cast<size_t>(w.rows * w.cols) * sizeof(float))};
        auto* out = reinterpret_cast<float*>(r.bytes.data());
        for (int64_t row = 0; row < w.rows; ++row) dequantize_row(w.type, w.row(row), out + row * w.cols, w.cols);
        replacements.push_back(std::move(r));
    };
    for (const LayerWeights& l : model->layers()) {
        for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) add(*w);
    }
    add(model->token_embedding());
    if (!model->config().tied_output) add(model->output());
    return Model::with_replaced_weights(model, std::move(replacements));
}

TEST_F(GpuModel, Qwen2TinyQ8_0WithF32InputsMatchesCpuOnDequantizedWeights) {
    // F32 inputs forced. This model's planted outlier channel makes the two encodings differ by
    // several hundredths, and makes one Q8_0 code flipped by a last-bit difference of its input
    // (a norm's summation order) cost a few hundredths too: the encoded products are checked
    // per op (GpuMatvecIntegerDot) and on the modern Q8_0 files (GpuModernModel).
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny-q8_0.gguf");
    open("qwen2-tiny-q8_0.gguf", KvDtype::F32, 0, false);
    if (!gpu_) return;
    ASSERT_FALSE(gpu::vulkan_encodes_quantized_inputs(gpu_->backend()));
    const auto prompt = reference("qwen2-tiny-q8_0.json")["prompt_ids"].get<std::vector<TokenId>>();
    const auto ours = testing::teacher_forced_logits(*gpu_, prompt);
    InferenceSession cpu_f32(dequantized_to_f32(model_), testing::test_session_options(KvDtype::F32));
    const auto expected = testing::teacher_forced_logits(cpu_f32, prompt);
    const auto native = testing::teacher_forced_logits(*cpu_, prompt);
    float worst = 0, worst_native = 0;
    for (size_t i = 0; i < prompt.size(); ++i) {
        worst = std::max(worst, max_abs_diff(ours[i], expected[i]));
        worst_native = std::max(worst_native, max_abs_diff(ours[i], native[i]));
    }
    EXPECT_LE(worst, 1e-4);
    std::printf(
        "[ measured ] qwen2-tiny Q8_0, F32 inputs: max |logit GPU - CPU on F32 weights| = %.3g, "
        "- CPU with Q8_0 inputs = %.3g\n",
        worst, worst_native);
}

// Prompts of three sequences prefilled in one ragged batch, then decoded together, give
// the logits each gets alone. Every prompt has at least 16 tokens, so alone and batched its
// products use the same (tiled) kernel, whose sums do not depend on the batch: shorter
// ones alone would use the matrix-vector kernel, another summation order (4.4e-4 apart on
// an H200 for logits of magnitude about 10).
TEST_F(GpuModel, BatchOfSequencesEqualsSingleRuns) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    open("stories260K.gguf", KvDtype::F16);
    if (!gpu_) return;
    std::vector<std::vector<TokenId>> prompts;
    for (int length : {17, 24, 16}) {
        prompts.emplace_back();
        for (int i = 0; i < length; ++i) prompts.back().push_back(static_cast<TokenId>(1 + (i * 31 + length * 7) % 500));
    }
    std::vector<std::vector<float>> alone;
    for (const auto& p : prompts) alone.push_back(testing::greedy_with_cache(*gpu_, p, 2).logits[1]);

    std::vector<SeqId> seqs;
    Batch batch;
    for (const auto& p : prompts) {
        seqs.push_back(gpu_->new_sequence());
        for (size_t i = 0; i < p.size(); ++i) batch.push_back({p[i], seqs.back(), static_cast<int32_t>(i), i + 1 == p.size()});
    }
    const std::span<const float> first = gpu_->decode(batch);
    const auto n_vocab = static_cast<size_t>(model_->config().n_vocab);
    Batch next;
    for (size_t s = 0; s < prompts.size(); ++s) {
        next.push_back({argmax(first.subspan(s * n_vocab, n_vocab)), seqs[s], static_cast<int32_t>(prompts[s].size()), true});
    }
    const std::span<const float> second = gpu_->decode(next);
    for (size_t s = 0; s < prompts.size(); ++s) {
        EXPECT_LE(max_abs_diff(alone[s], second.subspan(s * n_vocab, n_vocab)), 1e-5f) << "sequence " << s;
    }
}

// A fork shares its parent's blocks; the first write into the shared, partly filled block
// copies it on the device (copy_kv_blocks). Both branches then match the CPU backend.
TEST_F(GpuModel, ForkedSequencesMatchCpu) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    open("stories260K.gguf", KvDtype::F32);
    if (!gpu_) return;
    const std::vector<TokenId> prompt = {1, 403, 407, 261, 378, 67, 43, 298, 74, 27, 18, 250, 9, 88, 300, 41, 17, 29, 35, 400};
    auto run = [&](InferenceSession& session) {
        const SeqId parent = session.new_sequence();
        Batch batch;
        for (size_t i = 0; i < prompt.size(); ++i) batch.push_back({prompt[i], parent, static_cast<int32_t>(i), false});
        session.decode(batch);
        const SeqId child = session.fork_sequence(parent);
        const auto pos = static_cast<int32_t>(prompt.size());
        const Batch next = {{100, parent, pos, true}, {200, child, pos, true}};
        const std::span<const float> logits = session.decode(next);
        return std::vector<float>(logits.begin(), logits.end());
    };
    EXPECT_LE(max_abs_diff(run(*gpu_), run(*cpu_)), 1e-4f);
}

// A 45-token prompt in one pass (tiled products) and in passes of 16 and 7 tokens (tiled
// and matrix-vector products) gives the CPU's logits at every position.
TEST_F(GpuModel, LongPromptInOneOrSeveralPassesMatchesCpu) {
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    std::vector<TokenId> prompt;
    for (int i = 0; i < 45; ++i) prompt.push_back(static_cast<TokenId>(1 + (i * 37) % 500));
    for (int pass_tokens : {0, 16, 7}) {
        open("stories260K.gguf", KvDtype::F32, pass_tokens);
        if (!gpu_) return;
        const auto ours = testing::teacher_forced_logits(*gpu_, prompt);
        const auto cpu = testing::teacher_forced_logits(*cpu_, prompt);
        float worst = 0;
        for (size_t i = 0; i < prompt.size(); ++i) worst = std::max(worst, max_abs_diff(ours[i], cpu[i]));
        EXPECT_LE(worst, 1e-4f) << "passes of " << pass_tokens << " tokens (0: one pass)";
    }
}

// max |GPU - CPU| of the teacher-forced logits at each position of `prompt`.
std::vector<float> teacher_forced_differences(InferenceSession& gpu, InferenceSession& cpu, const std::vector<TokenId>& prompt) {
    const auto ours = testing::teacher_forced_logits(gpu, prompt);
    const auto expected = testing::teacher_forced_logits(cpu, prompt);
    std::vector<float> differences;
    for (size_t i = 0; i < prompt.size(); ++i) differences.push_back(max_abs_diff(ours[i], expected[i]));
    return differences;
}

// The largest |GPU - CPU| over the teacher-forced logits of `prompt`.
float teacher_forced_difference(InferenceSession& gpu, InferenceSession& cpu, const std::vector<TokenId>& prompt) {
    const std::vector<float> differences = teacher_forced_differences(gpu, cpu, prompt);
    return *std::max_element(differences.begin(), differences.end());
}

// The largest |GPU - CPU| logit allowed. The CPU's semantics round some values to F16: the
// F16 KV cache, and GeGLU's input and output (its F16 table). There a last-bit difference of
// the products (summation order) can become a whole F16 step (2^-11 relative) of a value,
// so those models get a wider bound than the float one.
float logit_tolerance(const ModelConfig& c, KvDtype kv) {
    const bool f16_steps = kv == KvDtype::F16 || c.ffn_activation == FfnActivation::GeluTanh;
    return f16_steps ? 5e-3f : 1e-4f;
}

struct TinyCase {
    const char* architecture;
    KvDtype kv;
};

class GpuTinyModel : public GpuModel, public ::testing::WithParamInterface<TinyCase> {};

// qwen3 (head_dim 32: q is twice n_embd; per-head Q/K norms) and gemma3 (embedding scale,
// GeGLU, post-norms, a layer with a 5-token window and its own RoPE base, then a global
// one) over 40 tokens, in one pass (tiled products) and in passes of 7 (matrix-vector
// products, windows that start in an earlier pass), then greedy decoding.
TEST_P(GpuTinyModel, TeacherForcedAndGreedyMatchCpu) {
    const TinyCase c = GetParam();
    const auto model = testing::tiny_model(testing::tiny_spec(c.architecture));
    const std::vector<TokenId> prompt = synthetic_prompt(40, model->config().n_vocab);
    const std::string what = std::string(c.architecture) + " KV " + std::string(kv_dtype_name(c.kv));
    for (int pass_tokens : {0, 7}) {
        open(model, c.kv, pass_tokens);
        if (!gpu_) return;
        const float worst = teacher_forced_difference(*gpu_, *cpu_, prompt);
        EXPECT_LE(worst, logit_tolerance(model->config(), c.kv)) << what << ", passes of " << pass_tokens
                                                                  << " tokens (0: one pass)";
        std::printf("[ measured ] tiny %s, passes of %d: max |teacher-forced logit GPU - CPU| = %.3g\n", what.c_str(),
                    pass_tokens, worst);
    }
    expect_greedy_equal(*gpu_, *cpu_, prompt, 12, logit_tolerance(model->config(), c.kv), "tiny " + what);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GpuTinyModel,
                         ::testing::Values(TinyCase{"qwen3", KvDtype::F32}, TinyCase{"qwen3", KvDtype::F16},
                                           TinyCase{"gemma3", KvDtype::F32}, TinyCase{"gemma3", KvDtype::F16}),
                         [](const auto& info) {
                             return std::string(info.param.architecture) + "_" + std::string(kv_dtype_name(info.param.kv));
                         });

// A multi-query model with 20 query heads on its one KV head: attention splits them between two
// workgroups of 10. Teacher-forced in one pass (prompt tiles) and in passes of 7, then greedy.
TEST_F(GpuModel, MultiQueryModelOfTwentyHeadsMatchesCpu) {
    SyntheticModelSpec spec = testing::tiny_spec("llama");
    spec.n_head = 20;
    spec.n_head_kv = 1;
    spec.head_dim = 16;
    const auto model = testing::tiny_model(spec);
    const std::vector<TokenId> prompt = synthetic_prompt(40, model->config().n_vocab);
    const float bound = logit_tolerance(model->config(), KvDtype::F16);
    for (int pass_tokens : {0, 7}) {
        open(model, KvDtype::F16, pass_tokens);
        if (!gpu_) return;
        const float worst = teacher_forced_difference(*gpu_, *cpu_, prompt);
        EXPECT_LE(worst, bound) << "passes of " << pass_tokens << " tokens (0: one pass)";
        std::printf("[ measured ] multi-query, 20 heads, passes of %d: max |teacher-forced logit GPU - CPU| = %.3g\n",
                    pass_tokens, worst);
    }
    expect_greedy_equal(*gpu_, *cpu_, prompt, 12, bound, "multi-query, 20 heads");
}

// The shared random-weight models of current architectures (../shared/models/modern): the
// prompt of their llama.cpp reference, teacher-forced, then greedy decoding. A Q8_0 file runs
// twice. With F32 inputs forced it is compared with the CPU on the same weights dequantized to
// F32 (see dequantized_to_f32). With the device's choice, where that encodes the inputs as the
// CPU does, with the CPU itself: there a last-bit difference of an input (a norm's or the
// attention's summation order) can flip its Q8_0 code by one, a whole step of its block's
// scale, so the bound is the one the CPU meets against llama.cpp on these files
// (tests/model/test_modern_reference.cpp: 0.15 on the top logits). That bound would also pass
// F32 inputs (a few hundredths off): the encoding itself is checked per op (GpuMatvecIntegerDot).
class GpuModernModel : public GpuModel, public ::testing::WithParamInterface<const char*> {};

TEST_P(GpuModernModel, TeacherForcedAndGreedyMatchCpu) {
    const std::string stem = GetParam();
    INFERSCOPE_REQUIRE_SHARED_FILE("modern/" + stem + ".gguf");
    std::ifstream in(shared_model("modern/" + stem + ".ref.json"));
    const auto prompt = nlohmann::json::parse(in)["prompt_ids"].get<std::vector<TokenId>>();
    const bool quantized = stem.find("q8_0") != std::string::npos;
    bool encoded = false;
    for (std::optional<bool> integer_dot : {std::optional<bool>(), std::optional<bool>(false)}) {
        if (integer_dot.has_value() && !encoded) break;  // the first run had F32 inputs already
        open("modern/" + stem + ".gguf", KvDtype::F32, 0, integer_dot);
        if (!gpu_) return;
        encoded = quantized && gpu::vulkan_encodes_quantized_inputs(gpu_->backend());
        const bool dequantized = quantized && !encoded;
        InferenceSession cpu_f32(dequantized_to_f32(model_), testing::test_session_options(KvDtype::F32));
        InferenceSession& cpu = dequantized ? cpu_f32 : *cpu_;
        const float tolerance = encoded ? 0.15f : logit_tolerance(model_->config(), KvDtype::F32);
        const std::string what = stem + (encoded ? ", Q8_0 inputs" : dequantized ? ", F32 inputs" : "");
        const float worst = teacher_forced_difference(*gpu_, cpu, prompt);
        EXPECT_LE(worst, tolerance) << what;
        std::printf("[ measured ] %s (%zu tokens): max |teacher-forced logit GPU - CPU%s| = %.3g\n", what.c_str(), prompt.size(),
                    dequantized ? " on F32 weights" : "", worst);
        expect_greedy_equal(*gpu_, cpu, prompt, 8, tolerance, what);
        EXPECT_EQ(gpu::vulkan_validation_errors(gpu_->backend()), 0) << "Vulkan validation errors (printed above)";
        gpu_.reset();
    }
}

INSTANTIATE_TEST_SUITE_P(Files, GpuModernModel,
                         ::testing::Values("qwen3-tiny", "qwen3-tiny-q8_0", "gemma3-tiny", "gemma3-tiny-q8_0", "llama3-tiny"),
                         [](const auto& info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// `f32` with layer i's q, k, v, o, gate, up and down weights quantized to layer_types[i], and
// its embedding and output matrices to the two types given.
std::shared_ptr<const Model> quantized_copy(const std::shared_ptr<const Model>& f32,
                                            const std::vector<std::array<GgmlType, 7>>& layer_types, GgmlType embedding,
                                            GgmlType output) {
    std::vector<ReplacementWeight> replacements;
    auto add = [&](const WeightMatrix& w, GgmlType type) {
        ReplacementWeight r{w.name, type, std::vector<uint8_t>(ggml_row_bytes(type, static_cast<uint64_t>(w.cols)) * w.rows)};
        for (int64_t row = 0; row < w.rows; ++row) {
            quantize_row(type, reinterpret_cast<const float*>(w.row(row)), r.bytes.data() + row * (r.bytes.size() / w.rows),
                         w.cols);
        }
        replacements.push_back(std::move(r));
    };
    for (size_t i = 0; i < f32->layers().size(); ++i) {
        const LayerWeights& l = f32->layers()[i];
        const std::array<const WeightMatrix*, 7> ws = {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down};
        for (size_t j = 0; j < ws.size(); ++j) add(*ws[j], layer_types[i][j]);
    }
    add(f32->token_embedding(), embedding);
    add(f32->output(), output);
    return Model::with_replaced_weights(f32, std::move(replacements));
}

std::shared_ptr<const Model> tiny_llama_of_256_blocks() {
    SyntheticModelSpec spec = testing::tiny_spec("llama");
    spec.n_embd = 256;
    spec.n_ff = 512;
    return testing::tiny_model(spec);
}

// The model files people have mix weight types (Q4_K_M: Q4_K, Q6_K, with Q5_0 or Q8_0 where a
// row is not a whole number of 256-blocks). Every quantized type a weight file uses, in one model:
// fused q/k/v and gate/up of one K-quant, unfused ones of three types, and K-quant embedding
// and output matrices, and a float v beside block-format q and k (F32: a half type's rounded
// inputs are HalfWeightsMatchTheCpusArithmetic's). The GPU reads the blocks; the CPU runs the
// same weights dequantized to F32, so the two differ only in summation order.
TEST_F(GpuModel, EveryWeightTypeReadInPlaceMatchesCpuOnDequantizedWeights) {
    const std::vector<std::array<GgmlType, 7>> layer_types = {
        {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::IQ4_XS, GgmlType::Q5_K, GgmlType::Q5_K, GgmlType::Q6_K},
        {GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::F32, GgmlType::IQ4_NL, GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q3_K}};
    // F32 inputs, as the CPU's on the weights dequantized to F32 (encoded inputs: the test below).
    open(quantized_copy(tiny_llama_of_256_blocks(), layer_types, GgmlType::Q4_K, GgmlType::Q2_K), KvDtype::F32, 0, false);
    if (!gpu_) return;
    InferenceSession cpu_f32(dequantized_to_f32(model_), testing::test_session_options(KvDtype::F32));
    const std::vector<TokenId> prompt = synthetic_prompt(24, model_->config().n_vocab);
    const float worst = teacher_forced_difference(*gpu_, cpu_f32, prompt);
    EXPECT_LE(worst, 1e-4);
    std::printf("[ measured ] mixed weight types: max |teacher-forced logit GPU - CPU on F32 weights| = %.3g\n", worst);
    expect_greedy_equal(*gpu_, cpu_f32, prompt, 8, 1e-4f, "mixed weight types");
    // The last decode step: layer 0's q/k/v (one type) take one dispatch that also stores the
    // cache (5 in the layer); layer 1's Q4_1 q and Q5_0 k (one input encoding, Q8_1, serves
    // both) one, its F32 v another with no barrier between them, and the cache step one more
    // (7). Outside the layers the embedding and the output product with the final norm.
    const DeviceSubmission step = gpu_->backend().last_forward_submission().value();
    EXPECT_EQ(step.dispatches, 5 + 7 + 2);
    EXPECT_EQ(step.barriers, step.dispatches + 1 - 1);
}

// F16 and BF16 models: the GPU multiplies their weights by the input rounded to F16 or BF16 as
// the CPU does (bit for bit per op: GpuOps.HalfWeightsMultiplyTheirInputRoundedAsTheCpuRoundsIt),
// in passes of 8 tokens (the mat-vec), of 12 (matmul.comp) and in one (the tiles). Across a
// model a last-bit difference of an input (a norm's summation order) now and then moves its
// rounding by a whole step (2^-11 relative for F16, 2^-8 for BF16), which this model's
// outputs show as thousandths (F16) to hundredths (BF16); lavapipe: 4.2e-3 and 1.9e-2, with
// F32 inputs 7.3e-3 and 5.1e-2. So the bounds are wide, and the test asserts which arithmetic
// the GPU follows: at most positions its logits are closer to the CPU's than to those of the
// CPU on F32 inputs (the weights dequantized to F32), which unrounded inputs would match.
TEST_F(GpuModel, HalfWeightsMatchTheCpusArithmetic) {
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16}) {
        const float bound = type == GgmlType::F16 ? 1e-2f : 8e-2f;
        const std::array<GgmlType, 7> layer = {type, type, type, type, type, type, type};
        const auto model = quantized_copy(tiny_llama_of_256_blocks(), {layer, layer}, type, type);
        const std::vector<TokenId> prompt = synthetic_prompt(24, model->config().n_vocab);
        const std::string what = std::string(ggml_type_name(type)) + " model";
        InferenceSession cpu_f32_inputs(dequantized_to_f32(model, true), testing::test_session_options(KvDtype::F32));
        for (int pass_tokens : {8, 12, 0}) {
            open(model, KvDtype::F32, pass_tokens);
            if (!gpu_) return;
            const std::vector<float> rounded = teacher_forced_differences(*gpu_, *cpu_, prompt);
            const std::vector<float> unrounded = teacher_forced_differences(*gpu_, cpu_f32_inputs, prompt);
            std::ptrdiff_t closer = 0;
            for (size_t i = 0; i < prompt.size(); ++i) closer += rounded[i] < unrounded[i];
            const float worst = *std::max_element(rounded.begin(), rounded.end());
            EXPECT_LE(worst, bound) << what << ", passes of " << pass_tokens << " tokens (0: one pass)";
            EXPECT_GE(closer * 4, static_cast<std::ptrdiff_t>(prompt.size() * 3)) << what << ", passes of " << pass_tokens;
            std::printf(
                "[ measured ] %s, passes of %d tokens (0: one): max |teacher-forced logit GPU - CPU| = %.3g, - CPU on F32 "
                "inputs = %.3g; closer to the CPU at %td of %zu positions\n",
                what.c_str(), pass_tokens, worst, *std::max_element(unrounded.begin(), unrounded.end()), closer, prompt.size());
        }
        expect_greedy_equal(*gpu_, *cpu_, prompt, 8, bound, what);
    }
}

// Models whose inputs are encoded as the CPU encodes them, against the CPU itself: a Q4_K_M-like
// one (Q4_K, Q6_K for attn_v, ffn_down and the output: Q8_K inputs), one of the formats with a
// minimum (Q4_1, Q5_1: Q8_1 inputs), and a Q5_K_M-like one on rows that 256 does not divide
// (Q5_1, Q8_0 for attn_v, ffn_down and the output: one Q8_1 encoding serves q, k and v).
struct EncodedCase {
    const char* name;
    std::array<GgmlType, 7> layer;
    GgmlType embedding, output;
};

class GpuEncodedModel : public GpuModel, public ::testing::WithParamInterface<EncodedCase> {};

TEST_P(GpuEncodedModel, MatchesTheCpusArithmetic) {
    const EncodedCase& c = GetParam();
    const auto model = quantized_copy(tiny_llama_of_256_blocks(), {c.layer, c.layer}, c.embedding, c.output);
    const std::vector<TokenId> prompt = synthetic_prompt(24, model->config().n_vocab);
    // Where no code moved the GPU and the CPU differ in summation order only (lavapipe: about
    // 4e-6); a code moved by a last-bit difference of its input (the GPU's summation order, its
    // inverse RMS) costs hundredths, so the bound is the modern Q8_0 files' (GpuModernModel).
    const float bound = 0.15f;
    // Passes of up to 8 tokens run the mat-vecs, one pass of 24 the tiles: both sum the CPU's
    // integer block products, so that far fewer positions differ by more than summation order
    // (1e-3: a moved code, or F32 inputs) than with F32 inputs. Counted rather than the worst
    // position: a device may move a code where lavapipe moves none.
    constexpr float kSummationOrder = 1e-3f;
    for (int pass_tokens : {8, 0}) {
        float worst[2] = {0, 0};  // the device's choice, then F32 inputs
        std::ptrdiff_t off[2] = {0, 0};  // positions beyond summation order
        for (int run = 0; run < 2; ++run) {
            open(model, KvDtype::F32, pass_tokens, run == 0 ? std::optional<bool>() : std::optional<bool>(false));
            if (!gpu_) return;
            if (run == 0 && !gpu::vulkan_encodes_quantized_inputs(gpu_->backend())) {
                GTEST_SKIP() << "the device lacks integer dot products or subgroup arithmetic: its inputs stay F32";
            }
            const std::vector<float> differences = teacher_forced_differences(*gpu_, *cpu_, prompt);
            worst[run] = *std::max_element(differences.begin(), differences.end());
            off[run] = std::count_if(differences.begin(), differences.end(), [&](float d) { return d > kSummationOrder; });
            gpu_.reset();
        }
        std::printf(
            "[ measured ] %s model, passes of %d tokens (0: one): max |teacher-forced logit GPU - CPU| = %.3g with "
            "encoded inputs, %.3g with F32 inputs; positions beyond %.0e: %td and %td of %zu\n",
            c.name, pass_tokens, worst[0], worst[1], kSummationOrder, off[0], off[1], prompt.size());
        EXPECT_LE(worst[0], bound) << "passes of " << pass_tokens;
        EXPECT_LE(off[0] * 4, off[1]) << "passes of " << pass_tokens;
        EXPECT_GT(off[1], 0) << "F32 inputs should differ from the CPU's encoding";
    }
    open(model, KvDtype::F32);
    expect_greedy_equal(*gpu_, *cpu_, prompt, 8, bound, std::string(c.name) + " model, encoded inputs");
    // Each layer's q, k, v (of one input encoding, if not one type) in one dispatch that also
    // stores the cache: 5 dispatches per layer, the embedding and the normed output product.
    EXPECT_EQ(gpu_->backend().last_forward_submission().value().dispatches, 5 * model->config().n_layer + 2);
}

const char* const kEncodedCaseNames[] = {"KQuants", "WithMinimum", "MinimumBesideQ8_0"};

INSTANTIATE_TEST_SUITE_P(Formats, GpuEncodedModel,
                         ::testing::Values(EncodedCase{"Q4_K_M-like",
                                                       {GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::Q4_K,
                                                        GgmlType::Q4_K, GgmlType::Q4_K, GgmlType::Q6_K},
                                                       GgmlType::Q4_K,
                                                       GgmlType::Q6_K},
                                           EncodedCase{"Q4_1/Q5_1",
                                                       {GgmlType::Q4_1, GgmlType::Q4_1, GgmlType::Q4_1, GgmlType::Q5_1,
                                                        GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q4_1},
                                                       GgmlType::Q4_1,
                                                       GgmlType::Q5_1},
                                           EncodedCase{"Q5_K_M-like",
                                                       {GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q8_0, GgmlType::Q5_1,
                                                        GgmlType::Q5_1, GgmlType::Q5_1, GgmlType::Q8_0},
                                                       GgmlType::Q5_1,
                                                       GgmlType::Q8_0}),
                         [](const auto& info) { return std::string(kEncodedCaseNames[info.index]); });

}  // namespace
}  // namespace inferscope
