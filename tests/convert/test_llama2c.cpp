// convert_llama2c against the published stories260K checkpoint (the GGUF llama.cpp's converter
// made from it, and the built-in model), and on small checkpoints written here: the tokenizer
// rules, a separate classifier, and every malformed input refused by name.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/convert/llama2c.h"
#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/synth/builtin_models.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

std::string read_shared(const std::string& relative) {
    const auto text = testing::read_file_prefix(testing::shared_model(relative).string(), size_t{64} << 20);
    return text.value_or(std::string());
}

GgufFile parse(const GgufWriter& writer) { return GgufFile::from_bytes(writer.to_bytes(), "converted.gguf"); }

std::vector<uint8_t> tensor_bytes(const GgufFile& file, const std::string& name) {
    const GgufTensorInfo* t = file.find_tensor(name);
    if (t == nullptr) return {};
    return {t->data.begin(), t->data.end()};
}

Llama2cSources stories_sources(const std::string& checkpoint, const std::string& tokenizer) {
    Llama2cSources s;
    s.checkpoint = checkpoint;
    s.tokenizer = tokenizer;
    s.checkpoint_name = "stories260K.bin";
    s.tokenizer_name = "tok512.bin";
    s.model_name = "stories260K";
    return s;
}

TEST(Llama2cConversion, GivesTheTensorsAndVocabularyOfLlamaCppsConversion) {
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/stories260K.bin");
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/tok512.bin");
    INFERSCOPE_REQUIRE_SHARED_FILE("stories260K.gguf");
    const std::string checkpoint = read_shared("llama2c/stories260K.bin");
    const std::string tokenizer = read_shared("llama2c/tok512.bin");
    const GgufFile ours = parse(convert_llama2c(stories_sources(checkpoint, tokenizer)));
    const GgufFile theirs = GgufFile::open(testing::shared_model("stories260K.gguf").string());

    for (const char* key : {"llama.context_length", "llama.embedding_length", "llama.feed_forward_length", "llama.block_count",
                            "llama.attention.head_count", "llama.attention.head_count_kv", "llama.rope.dimension_count",
                            "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id"}) {
        EXPECT_EQ(ours.get_u64(key), theirs.get_u64(key)) << key;
    }
    EXPECT_EQ(ours.get_f64("llama.attention.layer_norm_rms_epsilon"), theirs.get_f64("llama.attention.layer_norm_rms_epsilon"));
    EXPECT_EQ(ours.get_string("tokenizer.ggml.model"), theirs.get_string("tokenizer.ggml.model"));
    const GgufArray& our_tokens = ours.get_array("tokenizer.ggml.tokens");
    const GgufArray& their_tokens = theirs.get_array("tokenizer.ggml.tokens");
    ASSERT_EQ(our_tokens.size(), their_tokens.size());
    for (size_t i = 0; i < our_tokens.size(); ++i) {
        EXPECT_EQ(our_tokens.string_at(i), their_tokens.string_at(i)) << "token " << i;
        EXPECT_EQ(ours.get_array("tokenizer.ggml.scores").at(i).as_f64(), theirs.get_array("tokenizer.ggml.scores").at(i).as_f64());
        EXPECT_EQ(ours.get_array("tokenizer.ggml.token_type").at(i).as_i64(),
                  theirs.get_array("tokenizer.ggml.token_type").at(i).as_i64());
    }

    // Every tensor byte for byte; llama.cpp writes the shared classifier as a copy, we tie it.
    EXPECT_EQ(ours.find_tensor("output.weight"), nullptr);
    EXPECT_EQ(ours.tensors().size() + 1, theirs.tensors().size());
    for (const GgufTensorInfo& t : theirs.tensors()) {
        const std::string name = t.name == "output.weight" ? "token_embd.weight" : t.name;
        const GgufTensorInfo* mine = ours.find_tensor(name);
        ASSERT_NE(mine, nullptr) << name;
        EXPECT_EQ(mine->dims, t.dims) << name;
        EXPECT_EQ(tensor_bytes(ours, name), std::vector<uint8_t>(t.data.begin(), t.data.end())) << t.name;
    }
}

TEST(Llama2cConversion, TheBuiltInModelIsThisConversionOfTheSharedCheckpoint) {
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/stories260K.bin");
    INFERSCOPE_REQUIRE_SHARED_FILE("llama2c/tok512.bin");
    const std::vector<uint8_t> converted =
        convert_llama2c(stories_sources(read_shared("llama2c/stories260K.bin"), read_shared("llama2c/tok512.bin"))).to_bytes();
    const std::span<const uint8_t> builtin = stories260k_gguf_bytes();
    EXPECT_EQ(std::vector<uint8_t>(builtin.begin(), builtin.end()), converted)
        << "resources/models/stories260K.gguf is not convert-llama2c's output for ../shared/models/llama2c";
}

// A llama2.c checkpoint of the given shape with weight i = i * 0.001 (legacy format).
std::string small_checkpoint(int vocab_size, bool shared_classifier) {
    const int32_t dim = 8, hidden = 12, layers = 1, heads = 2, kv_heads = 1, seq_len = 4;
    const int32_t header[7] = {dim, hidden, layers, heads, kv_heads, shared_classifier ? vocab_size : -vocab_size, seq_len};
    const int head_size = dim / heads, kv_dim = head_size * kv_heads;
    size_t floats = static_cast<size_t>(vocab_size * dim + layers * (2 * dim + 2 * dim * dim + 2 * dim * kv_dim + 3 * dim * hidden) +
                                        dim + seq_len * head_size);
    if (!shared_classifier) floats += static_cast<size_t>(vocab_size * dim);
    std::string bytes(reinterpret_cast<const char*>(header), sizeof header);
    for (size_t i = 0; i < floats; ++i) {
        const float v = static_cast<float>(i) * 0.001f;
        bytes.append(reinterpret_cast<const char*>(&v), sizeof v);
    }
    return bytes;
}

std::string tokenizer_of(const std::vector<std::string>& pieces) {
    std::string bytes;
    const int32_t max_length = 16;
    bytes.append(reinterpret_cast<const char*>(&max_length), sizeof max_length);
    float score = 0;
    for (const std::string& p : pieces) {
        const auto length = static_cast<int32_t>(p.size());
        bytes.append(reinterpret_cast<const char*>(&score), sizeof score);
        bytes.append(reinterpret_cast<const char*>(&length), sizeof length);
        bytes += p;
        score -= 1;
    }
    return bytes;
}

const std::vector<std::string> kPieces = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x41>", " the", "cat", " ", "<0x4G>"};

TEST(Llama2cConversion, MapsPiecesAsSentencePieceAndKeepsASeparateClassifier) {
    const std::string checkpoint = small_checkpoint(8, /*shared_classifier=*/false);
    const std::string tokenizer = tokenizer_of(kPieces);
    const GgufFile file = parse(convert_llama2c(stories_sources(checkpoint, tokenizer)));
    const GgufArray& tokens = file.get_array("tokenizer.ggml.tokens");
    const std::vector<std::string> expected = {"<unk>", "<s>", "</s>", "<0x41>", "\u2581the", "cat", "\u2581", "<0x4G>"};
    const std::vector<int64_t> types = {2, 3, 3, 6, 1, 1, 1, 1};
    ASSERT_EQ(tokens.size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(tokens.string_at(i), expected[i]) << i;
        EXPECT_EQ(file.get_array("tokenizer.ggml.token_type").at(i).as_i64(), types[i]) << i;
        EXPECT_EQ(file.get_array("tokenizer.ggml.scores").at(i).as_f64(), -static_cast<double>(i));
    }
    EXPECT_EQ(file.get_u64("llama.context_length"), 4u);
    // The classifier is the checkpoint's last vocab x dim floats.
    const GgufTensorInfo* output = file.find_tensor("output.weight");
    ASSERT_NE(output, nullptr);
    EXPECT_EQ(std::memcmp(output->data.data(), checkpoint.data() + checkpoint.size() - 8 * 8 * sizeof(float), 8 * 8 * sizeof(float)), 0);
    // The first layer's query matrix follows the embeddings and the attention norms.
    float first_q;
    std::memcpy(&first_q, file.find_tensor("blk.0.attn_q.weight")->data.data(), sizeof first_q);
    EXPECT_FLOAT_EQ(first_q, static_cast<float>(8 * 8 + 8) * 0.001f);
}

std::string error_of(const std::string& checkpoint, const std::string& tokenizer) {
    try {
        convert_llama2c(stories_sources(checkpoint, tokenizer));
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(Llama2cConversion, RefusesMalformedInputsByName) {
    const std::string checkpoint = small_checkpoint(8, true);
    const std::string tokenizer = tokenizer_of(kPieces);
    EXPECT_NE(error_of(checkpoint.substr(0, checkpoint.size() - 4), tokenizer).find("stories260K.bin: " +
                                                                                 std::to_string(checkpoint.size() - 4) + " bytes"),
              std::string::npos);
    EXPECT_NE(error_of(checkpoint.substr(0, 10), tokenizer).find("too short for a llama2.c header"), std::string::npos);
    std::string versioned = checkpoint;
    versioned.replace(0, 4, "24ka");
    EXPECT_NE(error_of(versioned, tokenizer).find("export version 1 or 2"), std::string::npos);
    std::string odd_heads = checkpoint;
    const int32_t three = 3;
    std::memcpy(odd_heads.data() + 12, &three, sizeof three);
    EXPECT_NE(error_of(odd_heads, tokenizer).find("heads must split dim"), std::string::npos) << error_of(odd_heads, tokenizer);
    std::string zero_layers = checkpoint;
    std::memset(zero_layers.data() + 8, 0, 4);
    EXPECT_NE(error_of(zero_layers, tokenizer).find("n_layers is 0, expected 1..1024"), std::string::npos);

    EXPECT_NE(error_of(checkpoint, tokenizer_of({"<unk>", "a", "b"})).find("tok512.bin: offset 35: ends at token 3 of the model's 8"),
              std::string::npos)
        << error_of(checkpoint, tokenizer_of({"<unk>", "a", "b"}));
    std::vector<std::string> nine = kPieces;
    nine.push_back("extra");
    EXPECT_NE(error_of(checkpoint, tokenizer_of(nine)).find("follow the model's 8 tokens"), std::string::npos);
    std::vector<std::string> long_piece = kPieces;
    long_piece[5] = std::string(17, 'x');
    EXPECT_NE(error_of(checkpoint, tokenizer_of(long_piece)).find("token 5 has length 17 (max_token_length 16)"), std::string::npos);
}

}  // namespace
}  // namespace inferscope
