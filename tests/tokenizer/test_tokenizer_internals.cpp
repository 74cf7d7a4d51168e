// The building blocks: UTF-8 and byte-level helpers, the regex pre-tokenizers, special-token
// splitting, and load/encode speed on the largest vocabulary.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/unicode_text.h"
#include "engine/tokenizer/vocabulary.h"
#include "support/test_paths.h"

namespace inferscope {
namespace {

using namespace tokenizer_detail;
using Words = std::vector<std::string>;

TEST(ByteLevel, IsABijectionMatchingGpt2) {
    EXPECT_EQ(byte_to_unicode(' '), U'\u0120');   // "Ġ"
    EXPECT_EQ(byte_to_unicode('\n'), U'\u010A');  // "Ċ"
    EXPECT_EQ(byte_to_unicode('A'), U'A');
    EXPECT_EQ(byte_to_unicode(0xAD), U'\u0143');
    std::vector<bool> seen(0x144, false);
    for (int b = 0; b < 256; ++b) {
        const char32_t cp = byte_to_unicode(static_cast<uint8_t>(b));
        ASSERT_LT(cp, 0x144u);
        EXPECT_FALSE(seen[cp]);
        seen[cp] = true;
        EXPECT_EQ(unicode_to_byte(cp), static_cast<uint8_t>(b));
    }
    EXPECT_FALSE(unicode_to_byte(U' ').has_value());
    EXPECT_FALSE(unicode_to_byte(U'\u0144').has_value());
}

TEST(Utf8, DecodesLenientlyLikeLlamaCpp) {
    EXPECT_EQ(decode_utf8_lenient("a\xC3\xA9\xF0\x9F\xA6\x99"), (std::vector<char32_t>{U'a', 0xE9, 0x1F999}));
    EXPECT_EQ(decode_utf8_lenient("\xFF\x80"), (std::vector<char32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(decode_utf8_lenient("\xE2\x82"), (std::vector<char32_t>{0xFFFD, 0xFFFD}));
    EXPECT_EQ(decode_utf8_lenient("\xC0\x80"), (std::vector<char32_t>{0}));         // overlong, accepted
    EXPECT_EQ(decode_utf8_lenient("\xED\xA0\x80"), (std::vector<char32_t>{0xD800}));  // surrogate, accepted
    EXPECT_EQ(decode_utf8_lenient("\xF4\x90\x80\x80").size(), 4u);                   // above U+10FFFF
    std::string out;
    append_utf8(out, 0x1F999);
    EXPECT_EQ(out, "\xF0\x9F\xA6\x99");
    EXPECT_TRUE(is_unicode_white_space(0x3000));
    EXPECT_TRUE(is_unicode_white_space(0x85));
    EXPECT_FALSE(is_unicode_white_space(0x180E));
    EXPECT_FALSE(is_unicode_white_space(0x1C));
}

// Words come back byte-level encoded; this turns "Ġ"/"Ċ" back into bytes for readability.
Words split(const std::string& pre, const std::string& text) {
    Words words;
    for (const std::string& word : PreTokenizer(pre).split(text)) {
        std::string bytes;
        for (const char32_t cp : decode_utf8_lenient(word)) bytes.push_back(static_cast<char>(*unicode_to_byte(cp)));
        words.push_back(bytes);
    }
    return words;
}

TEST(PreTokenizer, Gpt2Pattern) {
    EXPECT_EQ(split("gpt-2", "Hello world's  test"), (Words{"Hello", " world", "'s", " ", " test"}));
    EXPECT_EQ(split("gpt-2", "a\n\nb  "), (Words{"a", "\n", "\n", "b", "  "}));
    EXPECT_EQ(split("gpt-2", "x 12345 !!"), (Words{"x", " 12345", " !!"}));
    EXPECT_EQ(split("gpt-2", ""), Words{});
}

TEST(PreTokenizer, DigitRulesDiffer) {
    EXPECT_EQ(split("qwen2", "12345"), (Words{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(split("llama-bpe", "12345"), (Words{"123", "45"}));
    EXPECT_EQ(split("starcoder", "a12"), (Words{"a", "1", "2"}));
    // Falcon: first punctuation runs, then GPT-2's pattern, then digit triples.
    EXPECT_EQ(split("falcon", "x 12345"), (Words{"x", " ", "123", "45"}));
}

TEST(PreTokenizer, Llama3Pattern) {
    EXPECT_EQ(split("llama-bpe", "I'VE  x\r\n\ny"), (Words{"I", "'VE", " ", " x", "\r\n\n", "y"}));
}

TEST(PreTokenizer, NonAsciiWhitespaceActsAsSpace) {
    // U+3000 is White_Space: \s for the regexes (llama.cpp maps it to VT before matching).
    EXPECT_EQ(split("gpt-2", "a\xE3\x80\x80" "b"), (Words{"a", "\xE3\x80\x80", "b"}));
    // U+180E is not (PCRE2 with UCP would say it is).
    EXPECT_EQ(split("gpt-2", "a\xE1\xA0\x8E" "b"), (Words{"a", "\xE1\xA0\x8E", "b"}));
}

TEST(PreTokenizer, DeepseekLlmTrailingWhitespaceRule) {
    // "\s+$" matches only at the very end of a fragment (no match before a final newline).
    EXPECT_EQ(split("deepseek-llm", "ab  "), (Words{"ab", "  "}));
    EXPECT_EQ(split("deepseek-llm", "ab  \n"), (Words{"ab", "  ", "\n"}));
}

TEST(PreTokenizer, EverySupportedNameKeepsEveryByteEvenOnLongRuns) {
    std::string mixed;
    for (int i = 0; i < 300; ++i) mixed += "Ab c'd 12345 !? \r\n\t\xC3\xA9\xE4\xBD\xA0\xE3\x80\x80 \xF0\x9F\xA6\x99 ";
    const std::vector<std::string> inputs = {std::string(50000, 'A'), std::string(50000, ' '), std::string(50000, '7'),
                                             std::string(50000, '!'), std::string(50000, '\n'), mixed};
    std::string names = PreTokenizer::supported_names() + ", ";
    for (size_t pos = 0, comma; (comma = names.find(", ", pos)) != std::string::npos; pos = comma + 2) {
        const std::string name = names.substr(pos, comma - pos);
        for (const std::string& input : inputs) {
            Words words;
            ASSERT_NO_THROW(words = split(name, input)) << name;
            std::string joined;
            for (const std::string& word : words) {
                EXPECT_FALSE(word.empty()) << name;
                joined += word;
            }
            EXPECT_EQ(joined, input) << name;
        }
    }
}

TEST(SpecialTokenSplitter, LongestFirstAndStrip) {
    const std::vector<std::string> texts = {"<a>", "<ab>", "x", "<s>"};
    const std::vector<uint32_t> attrs = {kAttrControl, kAttrUserDefined | kAttrLstrip, kAttrNormal,
                                         kAttrControl | kAttrRstrip};
    const SpecialTokenSplitter splitter(texts, attrs);
    const std::string text = "1 <ab> 2<a>3<s> \n4";
    auto describe = [&](const std::vector<TextFragment>& fragments) {
        std::vector<std::string> out;
        for (const auto& f : fragments) {
            out.push_back(f.is_token() ? std::string(1, '#').append(std::to_string(f.token))
                                       : text.substr(f.offset, f.length));
        }
        return out;
    };
    // Control tokens stay text without parse_special; "<ab>" (lstrip) eats the space before it.
    EXPECT_EQ(describe(splitter.split(text, false)), (std::vector<std::string>{"1", "#1", " 2<a>3<s> \n4"}));
    EXPECT_EQ(describe(splitter.split(text, true)), (std::vector<std::string>{"1", "#1", " 2", "#0", "3", "#3", "4"}));
    EXPECT_TRUE(splitter.split("", true).empty());
}

}  // namespace
}  // namespace inferscope
