#include "engine/tokenizer/vocabulary_tokenizer.h"

#include <charconv>

#include "engine/core/error.h"

namespace inferscope::tokenizer_detail {

VocabularyTokenizer::VocabularyTokenizer(Vocabulary&& vocab) {
    // Moving the vector hands over its buffer, so the index's string_views stay valid.
    tokens_ = std::move(vocab.tokens);
    index_ = std::move(vocab.index);
    types_ = std::move(vocab.types);
    attrs_ = std::move(vocab.attrs);
    scores_ = std::move(vocab.scores);
    bos_id_ = vocab.ids.bos;
    eos_id_ = vocab.ids.eos;
    unk_id_ = vocab.ids.unk;
    eot_id_ = vocab.ids.eot;
    eom_id_ = vocab.ids.eom;
    end_of_generation_ids_ = std::move(vocab.end_of_generation);
    load_warnings_ = std::move(vocab.warnings);
    add_bos_ = vocab.add_bos;
    add_eos_ = vocab.add_eos;
    add_space_prefix_ = vocab.add_space_prefix;
    splitter_ = SpecialTokenSplitter(tokens_, attrs_);
}

std::string VocabularyTokenizer::token_to_piece(TokenId id) const {
    if (id < 0 || id >= vocab_size()) {
        throw InvalidArgument("token id " + std::to_string(id) + " is outside the vocabulary (size " +
                              std::to_string(vocab_size()) + ")");
    }
    const uint32_t attr = attrs_[static_cast<size_t>(id)];
    const std::string& text = tokens_[static_cast<size_t>(id)];
    // llama.cpp's token_to_piece(special = false): control and unknown tokens render as
    // nothing, user-defined ones as their text; unused/undefined tokens also render as nothing.
    if (attr & (kAttrControl | kAttrUnknown)) return {};
    if (attr & kAttrUserDefined) return text;
    if (attr & kAttrNormal) return normal_token_piece(text);
    if (attr & kAttrByte) return std::string(1, static_cast<char>(byte_token_value(text)));
    return {};
}

uint8_t byte_token_value(const std::string& text) {
    if (text.size() < 4) return 0;
    const std::string_view digits = std::string_view(text).substr(3, 2);
    unsigned value = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), value, 16);
    return static_cast<uint8_t>(value);
}

}  // namespace inferscope::tokenizer_detail
