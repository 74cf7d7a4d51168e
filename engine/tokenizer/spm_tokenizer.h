#pragma once
// SentencePiece-style tokenizer (tokenizer.ggml.model = "llama"), reproducing llama.cpp's
// llm_tokenizer_spm: spaces become U+2581, then adjacent pieces are merged greedily by the
// score of the token they form, with byte tokens (<0xXX>) for anything left over.
#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocabulary_tokenizer.h"

namespace inferscope {
class GgufFile;
}

namespace inferscope::tokenizer_detail {

class SpmTokenizer final : public VocabularyTokenizer {
public:
    explicit SpmTokenizer(Vocabulary&& vocab);

    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const override;
    TokenizerKind kind() const override { return TokenizerKind::SentencePiece; }

    // Tokens for one text fragment whose spaces are already escaped to U+2581.
    void encode_escaped(std::string_view text, std::vector<TokenId>& out) const;
    // Byte fallback: "<0xXX>", else the one-byte token, else the unknown token (llama.cpp
    // throws there); kNoToken when none of these exists.
    TokenId byte_token(uint8_t byte) const { return byte_tokens_[byte]; }
    TokenId token_for(std::string_view text) const { return find_token(text); }
    float token_score(TokenId id) const { return score(id); }

protected:
    std::string normal_token_piece(const std::string& text) const override;

private:
    std::array<TokenId, 256> byte_tokens_{};
};

// tokenizer.ggml.model = "llama": llama.cpp's SPM defaults (BOS 1, EOS 2, UNK 0, BOS added,
// space prefix added) apply unless the metadata overrides them.
std::unique_ptr<Tokenizer> make_spm_tokenizer(const GgufFile& file);

}  // namespace inferscope::tokenizer_detail
