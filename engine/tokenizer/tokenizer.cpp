#include "engine/tokenizer/tokenizer.h"

#include <algorithm>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/bpe_tokenizer.h"
#include "engine/tokenizer/spm_tokenizer.h"

namespace inferscope {

std::unique_ptr<Tokenizer> Tokenizer::from_gguf(const GgufFile& file) {
    const std::string model = file.get_string("tokenizer.ggml.model");
    if (model == "llama") return tokenizer_detail::make_spm_tokenizer(file);
    if (model == "gpt2") return tokenizer_detail::make_bpe_tokenizer(file);
    throw UnsupportedError("tokenizer model \"" + model +
                           "\" (tokenizer.ggml.model) is not supported; supported: llama (SentencePiece), "
                           "gpt2 (byte-level BPE)");
}

// llama.cpp's detokenize(remove_special = false, unparse_special = false) without its
// clean_up_tokenization_spaces pass, which would break the byte round trip: the pieces
// concatenated, except that a vocabulary with a space prefix loses one leading space of the
// first token's piece (only the first token's: after a BOS the space stays, as in llama.cpp).
std::string Tokenizer::decode(std::span<const TokenId> ids) const {
    std::string text;
    for (size_t i = 0; i < ids.size(); ++i) {
        const std::string piece = token_to_piece(ids[i]);
        const bool strip = i == 0 && add_space_prefix_ && !piece.empty() && piece.front() == ' ';
        text.append(piece, strip ? 1 : 0);
    }
    return text;
}

std::string_view Tokenizer::kind_name() const {
    return kind() == TokenizerKind::SentencePiece ? "llama (SentencePiece)" : "gpt2 (byte-level BPE)";
}

bool Tokenizer::is_end_of_generation(TokenId id) const {
    return std::binary_search(end_of_generation_ids_.begin(), end_of_generation_ids_.end(), id);
}

}  // namespace inferscope
