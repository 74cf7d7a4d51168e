// Writing quantized models as GGUF: the file loads back and computes exactly what the
// in-memory quantized model computes, keeps the source's metadata and other tensors, and
// matches llama-quantize's own output tensor for tensor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <span>

#include "engine/core/error.h"
#include "engine/quant/gguf_export.h"
#include "engine/quant/model_quantizer.h"
#include "engine/runtime/session.h"
#include "support/test_paths.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

SyntheticModelSpec k_quant_spec(const std::string& arch) {
    SyntheticModelSpec s = testing::tiny_spec(arch);
    s.n_embd = 256;  // K-quants need rows of whole 256-weight super-blocks
    s.n_head = 8;
    s.n_head_kv = 4;
    s.n_ff = 512;
    s.weight_std = 0.02f;
    return s;
}

// Teacher-forced logits of a short token sequence, [n_tokens x n_vocab].
std::vector<float> logits_of(const std::shared_ptr<const Model>& model, const std::vector<TokenId>& tokens) {
    SessionOptions o;
    o.n_threads = 2;
    o.n_ctx = 64;
    InferenceSession session(model, o);
    const SeqId seq = session.new_sequence();
    std::vector<BatchToken> batch;
    for (size_t i = 0; i < tokens.size(); ++i) batch.push_back({tokens[i], seq, static_cast<int32_t>(i), true});
    const std::span<const float> logits = session.decode(batch);
    return {logits.begin(), logits.end()};
}

QuantRunOptions two_threads(bool embeddings = false) {
    QuantRunOptions o;
    o.n_threads = 2;
    o.include_embeddings = embeddings;
    return o;
}

TEST(GgufExport, WrittenModelGivesTheSameLogitsAsTheInMemoryModel) {
    for (const char* arch : {"llama", "qwen2"}) {
        for (const char* text : {"q8_0", "q4_0", "q4_k", "q6_k", "iq4_nl", "iq4_xs"}) {
            SCOPED_TRACE(std::string(arch) + " " + text);
            const auto base = testing::tiny_model(k_quant_spec(arch));
            const QuantScheme scheme = parse_quant_scheme(text);
            const QuantizedModel q = quantize_model(base, scheme, two_threads(/*embeddings=*/true));
            const std::vector<uint8_t> bytes = export_quantized_gguf(*q.model, scheme).to_bytes();
            const auto loaded = Model::from_gguf(GgufFile::from_bytes(bytes, std::string(text) + ".gguf"));
            EXPECT_EQ(loaded->layers()[1].w_down.type, scheme.gguf_type);
            EXPECT_EQ(loaded->token_embedding().type, scheme.gguf_type);
            EXPECT_EQ(loaded->file().get_u64("general.file_type"), llama_file_type(scheme));
            EXPECT_EQ(loaded->file().get_u64("general.quantization_version"), 2u);
            const std::vector<TokenId> tokens = {1, 17, 42, 99, 250, 3};
            EXPECT_EQ(logits_of(loaded, tokens), logits_of(q.model, tokens));
            // ...and not those of the unquantized model.
            EXPECT_NE(logits_of(loaded, tokens), logits_of(base, tokens));
        }
    }
}

TEST(GgufExport, MetadataAndOtherTensorsAreCopied) {
    const auto base = testing::tiny_model(k_quant_spec("llama"));
    const QuantScheme scheme = parse_quant_scheme("q4_k");
    const QuantizedModel q = quantize_model(base, scheme, two_threads());
    const GgufFile out = GgufFile::from_bytes(export_quantized_gguf(*q.model, scheme).to_bytes(), "out.gguf");
    const GgufFile& in = base->file();
    EXPECT_EQ(out.alignment(), in.alignment());
    for (const GgufKeyValue& kv : in.metadata()) {
        if (kv.key == "general.file_type") continue;
        const GgufValue* copied = out.find(kv.key);
        ASSERT_NE(copied, nullptr) << kv.key;
        EXPECT_EQ(copied->to_display_string(1000000), kv.value.to_display_string(1000000)) << kv.key;
    }
    ASSERT_EQ(out.tensors().size(), in.tensors().size());
    int quantized = 0;
    for (size_t i = 0; i < in.tensors().size(); ++i) {
        const GgufTensorInfo& a = in.tensors()[i];
        const GgufTensorInfo& b = out.tensors()[i];
        EXPECT_EQ(a.name, b.name);
        EXPECT_EQ(a.dims, b.dims);
        EXPECT_EQ(b.offset % out.alignment(), 0u);
        if (b.type == GgmlType::Q4_K) {
            ++quantized;
            continue;
        }
        EXPECT_EQ(a.type, b.type) << a.name;
        EXPECT_TRUE(std::equal(a.data.begin(), a.data.end(), b.data.begin(), b.data.end())) << a.name;
    }
    EXPECT_EQ(quantized, 14);  // the projections only: embeddings and output stay F32
}

TEST(GgufExport, OnlyGgufSchemesCanBeWritten) {
    const auto base = testing::tiny_model(k_quant_spec("llama"));
    const QuantScheme nf4 = parse_quant_scheme("nf4");
    const QuantizedModel q = quantize_model(base, nf4, two_threads());
    EXPECT_THROW(export_quantized_gguf(*q.model, nf4), InvalidArgument);
    // A model quantized with another GGUF type is refused too.
    const QuantizedModel q8 = quantize_model(base, parse_quant_scheme("q8_0"), two_threads());
    EXPECT_THROW(export_quantized_gguf(*q8.model, parse_quant_scheme("q6_k")), InvalidArgument);
}

// qwen2-tiny-q8_0.gguf was written by llama-quantize (Q8_0, every 2-D weight): ours must
// hold the same tensors with the same bytes.
TEST(GgufExport, Q8_0MatchesLlamaQuantizeTensorForTensor) {
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny.gguf");
    INFERSCOPE_REQUIRE_SHARED_FILE("qwen2-tiny-q8_0.gguf");
    const auto base = Model::load(testing::shared_model("qwen2-tiny.gguf").string());
    const QuantScheme scheme = parse_quant_scheme("q8_0");
    const QuantizedModel q = quantize_model(base, scheme, two_threads(/*embeddings=*/true));
    const GgufFile ours = GgufFile::from_bytes(export_quantized_gguf(*q.model, scheme).to_bytes(), "ours.gguf");
    const GgufFile theirs = GgufFile::open(testing::shared_model("qwen2-tiny-q8_0.gguf").string());
    ASSERT_EQ(ours.tensors().size(), theirs.tensors().size());
    for (const GgufTensorInfo& t : theirs.tensors()) {
        const GgufTensorInfo* mine = ours.find_tensor(t.name);
        ASSERT_NE(mine, nullptr) << t.name;
        EXPECT_EQ(mine->type, t.type) << t.name;
        EXPECT_EQ(mine->dims, t.dims) << t.name;
        EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), mine->data.begin(), mine->data.end())) << t.name;
    }
}

}  // namespace
}  // namespace inferscope
