#pragma once
// What the SentencePiece and BPE tokenizers share: the token table and its text index,
// token attributes and scores, special-token splitting and token_to_piece.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/special_tokens.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocabulary.h"

namespace inferscope::tokenizer_detail {

class VocabularyTokenizer : public Tokenizer {
public:
    std::string token_to_piece(TokenId id) const final;

protected:
    explicit VocabularyTokenizer(Vocabulary&& vocab);

    // The id of the token whose text is exactly `text`, or kNoToken.
    TokenId find_token(std::string_view text) const { return index_.find(text); }
    const TokenIndex& index() const { return index_; }
    float score(TokenId id) const { return scores_[static_cast<size_t>(id)]; }
    std::vector<TextFragment> split_special(std::string_view text, bool parse_special) const {
        return splitter_.split(text, parse_special);
    }

    // The bytes of a Normal token: SentencePiece turns U+2581 back into spaces, byte-level
    // BPE maps each character back to its byte.
    virtual std::string normal_token_piece(const std::string& text) const = 0;

private:
    TokenIndex index_;
    std::vector<uint32_t> attrs_;
    std::vector<float> scores_;
    SpecialTokenSplitter splitter_;
};

// The byte a "<0xXX>" byte token stands for (llama.cpp reads the two characters after "<0x";
// anything unparsable reads as 0, as strtol would give).
uint8_t byte_token_value(const std::string& text);

}  // namespace inferscope::tokenizer_detail
