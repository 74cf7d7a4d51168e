// The prompts of the llama.cpp logits references (reference/*.json): llama.cpp tokenized
// them with add_special and parse_special on; the greedy text is its token pieces joined.
#include <gtest/gtest.h>

#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_paths.h"
#include "tokenizer/vocab_vectors.h"

namespace inferscope {
namespace {

class ReferencePrompts : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferencePrompts, MatchLlamaCpp) {
    const std::string reference_file = std::string("reference/") + GetParam();
    INFERSCOPE_REQUIRE_SHARED_FILE(reference_file);
    std::ifstream in(testing::shared_model(reference_file));
    const nlohmann::json ref = nlohmann::json::parse(in);
    const std::string model_file = ref["model"].get<std::string>();
    INFERSCOPE_REQUIRE_SHARED_FILE(model_file);
    const GgufFile file = GgufFile::open(testing::shared_model(model_file).string());
    const auto tok = Tokenizer::from_gguf(file);

    EXPECT_EQ(tok->add_bos(), ref["add_bos"].get<bool>());
    EXPECT_EQ(tok->bos_id(), ref["bos_id"].get<TokenId>());
    EXPECT_EQ(tok->vocab_size(), ref["n_vocab"].get<int32_t>());
    const auto expected = ref["prompt_ids"].get<std::vector<TokenId>>();
    const auto actual = tok->encode(ref["prompt"].get<std::string>(), true, ref["parse_special"].get<bool>());
    EXPECT_EQ(actual, expected) << "expected " << testing::join_ids(expected) << " actual " << testing::join_ids(actual);

    std::string text;
    for (const TokenId id : ref["greedy"]["ids"].get<std::vector<TokenId>>()) text += tok->token_to_piece(id);
    EXPECT_EQ(text, ref["greedy"]["text"].get<std::string>());
}

INSTANTIATE_TEST_SUITE_P(LlamaCpp, ReferencePrompts, ::testing::Values("stories260K.json", "qwen2-tiny.json"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                             std::string name = info.param;
                             name.erase(name.find(".json"));
                             for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
                             return name;
                         });

}  // namespace
}  // namespace inferscope
