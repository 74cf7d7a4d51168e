#pragma once
// GPT-2-style byte-level BPE tokenizer (tokenizer.ggml.model = "gpt2"), reproducing llama.cpp's
// llm_tokenizer_bpe: the pre-tokenizer cuts the text into byte-level encoded words, and in
// each word adjacent symbols are merged lowest merge rank first.
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/vocabulary_tokenizer.h"

namespace inferscope {
class GgufFile;
}

namespace inferscope::tokenizer_detail {

// tokenizer.ggml.merges as ranks of id pairs. A merge applies to two adjacent symbols whose
// texts equal its two halves; every symbol text is given an id (its token id, or for merge
// halves that are not tokens an id past the vocabulary) so pairs can be looked up by ids.
class BpeMerges {
public:
    // Reads tokenizer.ggml.merges ("left right" strings, rank = position; llama.cpp splits at
    // the first space after position 0 and keeps the first rank of duplicate pairs).
    static BpeMerges read(const GgufFile& file, const TokenIndex& index, size_t n_tokens);

    // The id of a symbol text: its token id, a past-the-vocabulary id when it is only a merge
    // half, or -1 when no merge involves it.
    TokenId symbol_id(std::string_view text, const TokenIndex& index) const;
    int32_t rank(TokenId left, TokenId right) const {
        return ranks_.find(static_cast<uint32_t>(left), static_cast<uint32_t>(right));
    }

private:
    TokenId half_id(std::string_view text, const TokenIndex& index, size_t n_tokens);

    PairRankTable ranks_;
    std::unordered_map<std::string, TokenId, StringViewHash, std::equal_to<>> extra_ids_;
};

class BpeTokenizer final : public VocabularyTokenizer {
public:
    BpeTokenizer(Vocabulary&& vocab, BpeMerges merges, std::unique_ptr<PreTokenizer> pre_tokenizer,
                 std::string pre_tokenizer_name);

    std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const override;
    TokenizerKind kind() const override { return TokenizerKind::BytePairEncoding; }

    TokenId symbol_id(std::string_view text) const { return merges_.symbol_id(text, index()); }
    int32_t merge_rank(TokenId left, TokenId right) const { return merges_.rank(left, right); }
    TokenId token_for(std::string_view text) const { return find_token(text); }

protected:
    std::string normal_token_piece(const std::string& text) const override;

private:
    void encode_word(const std::string& word, std::vector<TokenId>& out) const;

    BpeMerges merges_;
    std::unique_ptr<PreTokenizer> pre_tokenizer_;
};

// tokenizer.ggml.model = "gpt2": needs tokenizer.ggml.merges; tokenizer.ggml.pre picks the
// pre-tokenizer (llama.cpp's "default" when absent).
std::unique_ptr<Tokenizer> make_bpe_tokenizer(const GgufFile& file);

}  // namespace inferscope::tokenizer_detail
