// Byte-level BPE tokenizer on a hand-made vocabulary (ids stated by hand) and on llama.cpp's
// gpt-2 / qwen2 / mpt vocabularies.
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
#include "tokenizer/vocab_vectors.h"

namespace inferscope {
namespace {

using Ids = std::vector<TokenId>;

// Byte-level texts: "Ġ" (U+0120) is the space byte.
// 0 h, 1 e, 2 l, 3 o, 4 Ġ, 5 w, 6 r, 7 d, 8 he, 9 ll, 10 llo, 11 hello, 12 Ġw, 13 <|endoftext|>,
// 14 lo, 15 <|x|> (user-defined)
testing::TinyVocab tiny_bpe(std::vector<std::string> merges) {
    testing::TinyVocab vocab;
    vocab.model = "gpt2";
    for (const char* text : {"h", "e", "l", "o", "\xC4\xA0", "w", "r", "d", "he", "ll", "llo", "hello",
                             "\xC4\xA0w"}) {
        vocab.tokens.push_back({text});
    }
    vocab.tokens.push_back({"<|endoftext|>", 0, TokenType::Control});
    vocab.tokens.push_back({"lo"});
    vocab.tokens.push_back({"<|x|>", 0, TokenType::UserDefined});
    vocab.merges = std::move(merges);
    vocab.extra = {{"tokenizer.ggml.pre", GgufValue::string("gpt-2")},
                   {"tokenizer.ggml.bos_token_id", GgufValue::u32(13)},
                   {"tokenizer.ggml.eos_token_id", GgufValue::u32(13)}};
    return vocab;
}

const std::vector<std::string> kMerges = {"h e", "l l", "ll o", "he llo", "\xC4\xA0 w", "l o"};

TEST(BpeTokenizer, MergesByRankWithinEachWord) {
    const auto tok = tiny_bpe(kMerges).tokenizer();
    // Words: "hello", "Ġworld". hello: h+e, l+l, ll+o, he+llo. Ġworld: only Ġ+w merges.
    EXPECT_EQ(tok->encode("hello world", false, false), (Ids{11, 12, 3, 6, 2, 7}));
    // "llo": l+l (rank 1) beats l+o (rank 5), then ll+o.
    EXPECT_EQ(tok->encode("llo", false, false), (Ids{10}));
    // With l+o ranked first, "llo" ends as l + lo: no merge joins "l" and "lo".
    EXPECT_EQ(tiny_bpe({"l o", "l l", "ll o"}).tokenizer()->encode("llo", false, false), (Ids{2, 14}));
    EXPECT_EQ(tok->decode(Ids{11, 12, 3, 6, 2, 7}), "hello world");
}

TEST(BpeTokenizer, BytesWithoutATokenAreDroppedLikeLlamaCpp) {
    const auto tok = tiny_bpe(kMerges).tokenizer();
    // "é" is bytes C3 A9, byte-level "Ã©"; neither character is a token here, and llama.cpp
    // then looks up each UTF-8 byte of the symbol alone, finds nothing and emits nothing.
    EXPECT_EQ(tok->encode("h\xC3\xA9", false, false), (Ids{0}));
}

TEST(BpeTokenizer, SpecialTokensAndBos) {
    const auto tok = tiny_bpe(kMerges).tokenizer();
    EXPECT_FALSE(tok->add_bos());  // llama.cpp's BPE default
    EXPECT_EQ(tok->encode("he", true, false), (Ids{8}));
    EXPECT_EQ(tok->encode("he<|endoftext|>", false, true), (Ids{8, 13}));
    EXPECT_EQ(tok->encode("he<|x|>he", false, false), (Ids{8, 15, 8}));  // user-defined: always
    const Ids unparsed = tok->encode("he<|endoftext|>", false, false);
    EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), 13), 0);
    EXPECT_TRUE(tok->is_end_of_generation(13));
    EXPECT_EQ(tok->token_to_piece(13), "");
    EXPECT_EQ(tok->token_to_piece(15), "<|x|>");
    EXPECT_EQ(tok->token_to_piece(12), " w");

    auto with_bos = tiny_bpe(kMerges);
    with_bos.extra.emplace_back("tokenizer.ggml.add_bos_token", GgufValue::boolean(true));
    EXPECT_EQ(with_bos.tokenizer()->encode("he", true, false), (Ids{13, 8}));

    // Llama 3's pre-tokenizer turns BOS on by default.
    auto llama3 = tiny_bpe(kMerges);
    llama3.extra[0].second = GgufValue::string("llama-bpe");
    const auto llama3_tok = llama3.tokenizer();
    EXPECT_TRUE(llama3_tok->add_bos());
    EXPECT_EQ(llama3_tok->encode("he", true, false), (Ids{13, 8}));
    EXPECT_EQ(llama3_tok->pre_tokenizer(), "llama-bpe");
}

TEST(BpeTokenizer, UnknownPreTokenizerIsUnsupported) {
    auto vocab = tiny_bpe(kMerges);
    vocab.extra[0].second = GgufValue::string("no-such-pre");
    try {
        vocab.tokenizer();
        FAIL() << "expected UnsupportedError";
    } catch (const UnsupportedError& e) {
        const std::string message = e.what();
        EXPECT_NE(message.find("no-such-pre"), std::string::npos) << message;
        for (const char* name : {"default", "gpt-2", "qwen2", "llama-bpe", "smollm", "deepseek-llm",
                                 "deepseek-coder", "falcon", "mpt", "starcoder", "refact", "phi-2"}) {
            EXPECT_NE(message.find(name), std::string::npos) << name << " missing from: " << message;
        }
    }
}

TEST(BpeTokenizer, EveryListedPreTokenizerCompilesAndSplits) {
    for (const char* name : {"default", "gpt-2", "phi-2", "qwen2", "llama-bpe", "llama3", "smollm", "deepseek-llm",
                             "deepseek-coder", "falcon", "mpt", "starcoder", "refact", "command-r", "dbrx",
                             "chatglm-bpe", "poro-chat", "viking", "tekken", "gpt-4o"}) {
        auto vocab = tiny_bpe(kMerges);
        vocab.extra[0].second = GgufValue::string(name);
        const auto tok = vocab.tokenizer();
        EXPECT_EQ(tok->encode("hello", false, false), (Ids{11})) << name;
        EXPECT_EQ(tok->decode(tok->encode("hello world", false, false)), "hello world") << name;
    }
}

TEST(BpeTokenizer, MissingPreTokenizerMeansDefault) {
    auto vocab = tiny_bpe(kMerges);
    vocab.extra.erase(vocab.extra.begin());
    const auto tok = vocab.tokenizer();
    EXPECT_EQ(tok->pre_tokenizer(), "default");
    EXPECT_EQ(tok->encode("hello world", false, false), (Ids{11, 12, 3, 6, 2, 7}));
}

TEST(BpeTokenizer, UnsupportedModelIsReported) {
    auto vocab = tiny_bpe(kMerges);
    vocab.model = "bert";
    EXPECT_THROW(vocab.tokenizer(), UnsupportedError);
}

TEST(BpeTokenizer, InconsistentMetadataNamesTheKey) {
    auto expect_error = [](const testing::TinyVocab& vocab, const std::string& key) {
        try {
            vocab.tokenizer();
            ADD_FAILURE() << "expected GgufError naming " << key;
        } catch (const GgufError& e) {
            EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
        }
    };
    auto short_scores = tiny_bpe(kMerges);
    short_scores.extra.emplace_back("tokenizer.ggml.scores", GgufValue::f32_array({0.0f, 1.0f}));
    expect_error(short_scores, "tokenizer.ggml.scores");

    auto short_types = tiny_bpe(kMerges);
    short_types.extra.emplace_back("tokenizer.ggml.token_type", GgufValue::i32_array({1, 1, 1}));
    expect_error(short_types, "tokenizer.ggml.token_type");

    auto duplicate = tiny_bpe(kMerges);
    duplicate.tokens.push_back({"he"});
    expect_error(duplicate, "tokenizer.ggml.tokens");

    auto no_merges = tiny_bpe({});
    expect_error(no_merges, "tokenizer.ggml.merges");

    auto wrong_type = tiny_bpe(kMerges);
    wrong_type.extra.emplace_back("tokenizer.ggml.merges", GgufValue::u32(3));
    expect_error(wrong_type, "tokenizer.ggml.merges");

    // add_bos_token without any BOS id (BPE's default 11 is fine here, so point it outside).
    auto no_bos = tiny_bpe(kMerges);
    no_bos.extra = {{"tokenizer.ggml.pre", GgufValue::string("chatglm-bpe")},
                    {"tokenizer.ggml.add_bos_token", GgufValue::boolean(true)}};
    expect_error(no_bos, "tokenizer.ggml.add_bos_token");
}

class Gpt2Vocab : public ::testing::Test {
protected:
    void SetUp() override {
        INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-gpt-2.gguf");
        file_ = std::make_unique<GgufFile>(GgufFile::open(testing::shared_model("vocab/ggml-vocab-gpt-2.gguf").string()));
        tok_ = Tokenizer::from_gguf(*file_);
    }
    std::unique_ptr<GgufFile> file_;
    std::unique_ptr<Tokenizer> tok_;
};

TEST_F(Gpt2Vocab, Basics) {
    EXPECT_EQ(tok_->kind(), TokenizerKind::BytePairEncoding);
    EXPECT_EQ(tok_->kind_name(), "gpt2 (byte-level BPE)");
    EXPECT_EQ(tok_->pre_tokenizer(), "gpt-2");
    EXPECT_EQ(tok_->vocab_size(), 50257);
    EXPECT_EQ(tok_->encode("Hello world", false, false), (Ids{15496, 995}));
    EXPECT_EQ(tok_->token_to_piece(995), " world");
    EXPECT_EQ(tok_->bos_id(), 50256);
    EXPECT_FALSE(tok_->add_bos());
    EXPECT_EQ(tok_->encode("Hello world", true, false), (Ids{15496, 995}));
    EXPECT_TRUE(tok_->is_end_of_generation(50256));
    EXPECT_FALSE(tok_->is_end_of_generation(995));
    EXPECT_EQ(tok_->encode("Hello<|endoftext|>", false, true), (Ids{15496, 50256}));
    EXPECT_NE(tok_->encode("Hello<|endoftext|>", false, false), (Ids{15496, 50256}));
}

TEST_F(Gpt2Vocab, InvalidUtf8BecomesReplacementCharacters) {
    // llama.cpp decodes the text leniently before pre-tokenizing: every byte that does not
    // start a well-formed sequence becomes U+FFFD (so the bytes do not round-trip).
    const std::string replacement = "\xEF\xBF\xBD";
    EXPECT_EQ(tok_->encode("a\xFF\xFE b", false, false), tok_->encode("a" + replacement + replacement + " b", false, false));
    EXPECT_EQ(tok_->encode("\xE2\x82", false, false), tok_->encode(replacement + replacement, false, false));
    EXPECT_EQ(tok_->encode("x\x80", false, false), tok_->encode("x" + replacement, false, false));
    // Forms llama.cpp accepts without validation are kept: an overlong NUL and a surrogate.
    for (const std::string& text : {std::string("\xC0\x80"), std::string("\xED\xA0\x80"), std::string("\xF4\x90\x80\x80")}) {
        EXPECT_NO_THROW(tok_->encode(text, false, false)) << testing::printable(text);
    }
    EXPECT_EQ(tok_->decode(tok_->encode("\xED\xA0\x80", false, false)), "\xED\xA0\x80");
}

TEST(Qwen2Vocab, ChatTemplateTokens) {
    INFERSCOPE_REQUIRE_SHARED_FILE("vocab/ggml-vocab-qwen2-rebuilt.gguf");
    const GgufFile file = GgufFile::open(testing::shared_model("vocab/ggml-vocab-qwen2-rebuilt.gguf").string());
    const auto tok = Tokenizer::from_gguf(file);
    EXPECT_EQ(tok->vocab_size(), 151936);
    EXPECT_FALSE(tok->add_bos());
    const Ids body = tok->encode("user\nhi", false, false);
    Ids expected{151644};
    expected.insert(expected.end(), body.begin(), body.end());
    expected.push_back(151645);
    EXPECT_EQ(tok->encode("<|im_start|>user\nhi<|im_end|>", true, true), expected);
    const Ids unparsed = tok->encode("<|im_start|>user\nhi<|im_end|>", false, false);
    EXPECT_EQ(std::count(unparsed.begin(), unparsed.end(), 151644), 0);
    EXPECT_EQ(tok->decode(unparsed), "<|im_start|>user\nhi<|im_end|>");
    // User-defined tokens are split out even without parse_special.
    EXPECT_EQ(tok->encode("<tool_call>", false, false), (Ids{151657}));
    EXPECT_TRUE(tok->is_end_of_generation(151645));  // <|im_end|> (EOS)
    EXPECT_TRUE(tok->is_end_of_generation(151643));  // <|endoftext|>
    EXPECT_FALSE(tok->is_end_of_generation(151644));
}

}  // namespace
}  // namespace inferscope
