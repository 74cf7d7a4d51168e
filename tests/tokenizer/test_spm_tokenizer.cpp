// SentencePiece-style tokenizer on a hand-made vocabulary (ids stated by hand) and on
// llama.cpp's llama-spm / phi-3 vocabularies.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/tokenizer.h"
#include "support/test_paths.h"
#include "tokenizer/tiny_vocab.h"

namespace inferscope {
namespace {

using Ids = std::vector<TokenId>;

// 0 <unk>, 1 <s>, 2 </s>, 3 "▁", 4 "a", 5 "b", 6 "▁a", 7 "ab", 8 <0xC3>, 9 <0xA9>,
// 10 "<|user|>" (user-defined), 11 "<|ctl|>" (control), 12 "▁b".
testing::TinyVocab tiny_spm(float score_space_a, float score_ab) {
    testing::TinyVocab vocab;
    vocab.model = "llama";
    vocab.tokens = {
        {"<unk>", 0, TokenType::Unknown},      {"<s>", 0, TokenType::Control},
        {"</s>", 0, TokenType::Control},       {"\xE2\x96\x81", -1},
        {"a", -2},                             {"b", -3},
        {"\xE2\x96\x81" "a", score_space_a},   {"ab", score_ab},
        {"<0xC3>", 0, TokenType::Byte},        {"<0xA9>", 0, TokenType::Byte},
        {"<|user|>", 0, TokenType::UserDefined}, {"<|ctl|>", 0, TokenType::Control},
        {"\xE2\x96\x81" "b", -9},
    };
    return vocab;
}

TEST(SpmTokenizer, MergesTheHighestScoringPairFirst) {
    // "ab" becomes "▁ab": the pairs "▁a" and "ab" compete for the "a".
    EXPECT_EQ(tiny_spm(-4, -5).tokenizer()->encode("ab", false, false), (Ids{6, 5}));
    EXPECT_EQ(tiny_spm(-5, -4).tokenizer()->encode("ab", false, false), (Ids{3, 7}));
    // Equal scores: the leftmost pair wins.
    EXPECT_EQ(tiny_spm(-4, -4).tokenizer()->encode("ab", false, false), (Ids{6, 5}));
}

TEST(SpmTokenizer, SpacesBecomeTheMarkerAndAPrefixIsAdded) {
    const auto tok = tiny_spm(-4, -5).tokenizer();
    EXPECT_TRUE(tok->add_space_prefix());
    EXPECT_EQ(tok->encode("a b", false, false), (Ids{6, 12}));
    EXPECT_EQ(tok->encode("", false, false), Ids{});
    EXPECT_EQ(tok->decode(Ids{6, 12}), "a b");  // the prefix space is removed again
}

TEST(SpmTokenizer, FallsBackToByteTokensThenToUnknown) {
    const auto tok = tiny_spm(-4, -5).tokenizer();
    EXPECT_EQ(tok->encode("\xC3\xA9", false, false), (Ids{3, 8, 9}));  // "é": no token, two byte tokens
    EXPECT_EQ(tok->decode(Ids{3, 8, 9}), "\xC3\xA9");
    // "z" has neither a token nor a byte token: llama.cpp throws there; we emit <unk>.
    EXPECT_EQ(tok->encode("z", false, false), (Ids{3, 0}));
}

TEST(SpmTokenizer, SpecialTokensAndSpacePrefixAfterThem) {
    const auto tok = tiny_spm(-4, -5).tokenizer();
    // User-defined tokens are always split out; the text after a special token gets the
    // space prefix again, as in llama.cpp.
    EXPECT_EQ(tok->encode("a<|user|>b", false, false), (Ids{6, 10, 12}));
    // Control tokens only with parse_special; otherwise their text is just text.
    EXPECT_EQ(tok->encode("<|ctl|>", false, true), (Ids{11}));
    EXPECT_EQ(tok->encode("<|ctl|>", false, false), (Ids{3, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(SpmTokenizer, BosAndEosFollowTheFlags) {
    const auto tok = tiny_spm(-4, -5).tokenizer();
    EXPECT_TRUE(tok->add_bos());  // llama.cpp's SPM default
    EXPECT_FALSE(tok->add_eos());
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->unk_id(), 0);
    EXPECT_EQ(tok->encode("a", true, false), (Ids{1, 6}));
    EXPECT_EQ(tok->encode("", true, false), (Ids{1}));
    EXPECT_EQ(tok->encode("a", false, false), (Ids{6}));

    auto vocab = tiny_spm(-4, -5);
    vocab.extra = {{"tokenizer.ggml.add_bos_token", GgufValue::boolean(false)},
                   {"tokenizer.ggml.add_eos_token", GgufValue::boolean(true)}};
    EXPECT_EQ(vocab.tokenizer()->encode("a", true, false), (Ids{6, 2}));
}

TEST(SpmTokenizer, UnsetSpecialIdsKeepTheDefaults) {
    // 4294967295 (the usual "unset") or any id outside the vocabulary is ignored, as llama.cpp
    // ignores a "bad special token": the type's default stays.
    auto vocab = tiny_spm(-4, -5);
    vocab.extra = {{"tokenizer.ggml.bos_token_id", GgufValue::u32(4294967295u)},
                   {"tokenizer.ggml.eos_token_id", GgufValue::u32(99)},
                   {"tokenizer.ggml.eot_token_id", GgufValue::u32(4294967295u)}};
    const auto tok = vocab.tokenizer();
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_id(), 2);
    EXPECT_EQ(tok->eot_id(), -1);
    EXPECT_TRUE(tok->is_end_of_generation(2));  // "</s>"
    EXPECT_FALSE(tok->is_end_of_generation(1));
    // An id outside the vocabulary is kept out but named once in a warning; "unset" is not.
    ASSERT_EQ(tok->load_warnings().size(), 1u);
    EXPECT_NE(tok->load_warnings()[0].find("tokenizer.ggml.eos_token_id = 99 is outside the vocabulary of"), std::string::npos)
        << tok->load_warnings()[0];
}

TEST(SpmTokenizer, EveryOutOfRangeSpecialIdIsNamedInAWarning) {
    auto vocab = tiny_spm(-4, -5);
    vocab.extra = {{"tokenizer.ggml.bos_token_id", GgufValue::u32(13)},  // one past the 13 tokens
                   {"tokenizer.ggml.unknown_token_id", GgufValue::u32(70000)},
                   {"tokenizer.ggml.eos_token_id", GgufValue::u32(2)}};
    const auto tok = vocab.tokenizer();
    EXPECT_EQ(tok->bos_id(), 1);  // the defaults stay
    EXPECT_EQ(tok->eos_id(), 2);
    const std::vector<std::string>& warnings = tok->load_warnings();
    ASSERT_EQ(warnings.size(), 2u);
    const auto named = [&warnings](const std::string& text) {
        return std::any_of(warnings.begin(), warnings.end(), [&text](const std::string& w) { return w.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(named("tokenizer.ggml.bos_token_id = 13 is outside the vocabulary of 13"));
    EXPECT_TRUE(named("tokenizer.ggml.unknown_token_id = 70000 is outside the vocabulary of 13"));
}

TEST(SpmTokenizer, TokenToPiece) {
    const auto tok = tiny_spm(-4, -5).tokenizer();
    EXPECT_EQ(tok->token_to_piece(0), "");  // unknown: rendered as nothing
    EXPECT_EQ(tok->token_to_piece(1), "");  // control
    EXPECT_EQ(tok->token_to_piece(6), " a");
    EXPECT_EQ(tok->token_to_piece(8), "\xC3");
    EXPECT_EQ(tok->token_to_piece(10), "<|user|>");
    EXPECT_THROW(tok->token_to_piece(13), InvalidArgument);
    EXPECT_THROW(tok->token_to_piece(-1), InvalidArgument);
    EXPECT_EQ(tok->kind(), TokenizerKind::SentencePiece);
    EXPECT_EQ(tok->kind_name(), "llama (SentencePiece)");
    EXPECT_EQ(tok->pre_tokenizer(), "");
}

TEST(SpmTokenizer, NoSpacePrefixWhenTheVocabularySaysSo) {
    auto vocab = tiny_spm(-4, -5);
    vocab.extra = {{"tokenizer.ggml.add_space_prefix", GgufValue::boolean(false)}};
    const auto tok = vocab.tokenizer();
    EXPECT_EQ(tok->encode("ab", false, false), (Ids{7}));  // no "▁" in front to compete with
    EXPECT_EQ(tok->decode(Ids{3, 4}), " a");              // and no leading space to remove
}

class LlamaSpmVocab : public ::testing::Test {
protected:
    void SetUp() override {
        INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-llama-spm.gguf");
        file_ = std::make_unique<GgufFile>(
            GgufFile::open(testing::shared_model("vocab/ggml-vocab-llama-spm.gguf").string()));
        tok_ = Tokenizer::from_gguf(*file_);
    }
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tok_;
};

TEST_F(LlamaSpmVocab, BosAndSpecialTokens) {
    const Ids hello = tok_->encode("Hello", false, false);
    Ids with_bos{1};
    with_bos.insert(with_bos.end(), hello.begin(), hello.end());
    EXPECT_EQ(tok_->encode("Hello", true, false), with_bos);
    // "</s>" is a control token: a token with parse_special, plain text without.
    const Ids parsed = tok_->encode("Hello</s>", false, true);
    ASSERT_FALSE(parsed.empty());
    EXPECT_EQ(parsed.back(), 2);
    EXPECT_EQ(Ids(parsed.begin(), parsed.end() - 1), hello);
    const Ids unparsed = tok_->encode("Hello</s>", false, false);
    EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), 2), 0);
    EXPECT_EQ(tok_->decode(unparsed), "Hello</s>");
    EXPECT_TRUE(tok_->is_end_of_generation(2));
}

TEST_F(LlamaSpmVocab, DecodeKeepsTheSpaceAfterBosLikeLlamaCpp) {
    // llama.cpp's detokenize strips the prefix space only from the very first token; behind a
    // BOS (which renders as nothing) the space stays.
    EXPECT_EQ(tok_->decode(tok_->encode("Hello world", false, false)), "Hello world");
    EXPECT_EQ(tok_->decode(tok_->encode("Hello world", true, false)), " Hello world");
}

TEST_F(LlamaSpmVocab, InvalidUtf8RoundTripsThroughByteTokens) {
    for (const std::string& text : {std::string("a\xFF" "b"), std::string("\xE2\x82"), std::string("\x80\x80 x"),
                                   std::string("\xC0\x80\xED\xA0\x80")}) {
        const Ids ids = tok_->encode(text, false, false);
        EXPECT_EQ(tok_->decode(ids), text);
    }
}

TEST(Phi3Vocab, SpecialTokensSwallowTheFollowingWhitespace) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-phi-3.gguf");
    const GgufFile file = GgufFile::open(testing::shared_model("vocab/ggml-vocab-phi-3.gguf").string());
    const auto tok = Tokenizer::from_gguf(file);
    const TokenId user = 32010;
    ASSERT_EQ(tok->token_text(user), "<|user|>");
    // llama.cpp marks Phi-3's special tokens rstrip (by model name): the newline after
    // "<|user|>" disappears and "Hello" is encoded as a fresh fragment (with the space prefix).
    Ids expected{user};
    const Ids hello = tok->encode("Hello", false, false);
    expected.insert(expected.end(), hello.begin(), hello.end());
    EXPECT_EQ(tok->encode("<|user|>\n Hello", false, true), expected);
    EXPECT_EQ(tok->eos_id(), 32000);
    EXPECT_TRUE(tok->is_end_of_generation(32000));  // <|endoftext|>
    EXPECT_TRUE(tok->is_end_of_generation(32007));  // <|end|>
}

}  // namespace
}  // namespace inferscope
