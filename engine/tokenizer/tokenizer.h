#pragma once
// Tokenizers built from a GGUF file's tokenizer.ggml.* metadata, reproducing llama.cpp's
// tokenization token for token: SentencePiece-style ("llama") and GPT-2 byte-level BPE
// ("gpt2", with the pre-tokenizer chosen by tokenizer.ggml.pre).
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace inferscope {

class GgufFile;

using TokenId = int32_t;

enum class TokenizerKind { SentencePiece, BytePairEncoding };

// Token attributes as tokenizer.ggml.token_type stores them.
enum class TokenType : int32_t {
    Undefined = 0, Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6,
};

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Reads tokenizer.ggml.* from the file. Throws UnsupportedError for tokenizer models or
    // pre-tokenizers that are not implemented (the message lists the supported ones) and
    // GgufError when the metadata is inconsistent.
    static std::unique_ptr<Tokenizer> from_gguf(const GgufFile& file);

    // add_special: prepend BOS / append EOS as the vocabulary's add_bos/add_eos flags say.
    // parse_special: text matching a control token's string becomes that token (user-defined
    // tokens are always recognized, as in llama.cpp). Token for token what llama.cpp's
    // llama_tokenize gives. Any bytes are accepted: invalid UTF-8 goes through SentencePiece's
    // byte fallback unchanged, while byte-level BPE sees each invalid byte as U+FFFD (both as
    // llama.cpp does). Thread-safe (const; no shared mutable state).
    virtual std::vector<TokenId> encode(std::string_view text, bool add_special, bool parse_special) const = 0;

    // The bytes a token stands for in generated text (llama.cpp's token_to_piece with
    // special = false: control tokens render as nothing, byte tokens as their byte, the
    // SentencePiece space marker as a space). Concatenating pieces round-trips bytes.
    // Throws InvalidArgument for an id outside the vocabulary.
    virtual std::string token_to_piece(TokenId id) const = 0;
    // llama.cpp's detokenize (remove_special = false, unparse_special = false) minus its
    // clean_up_tokenization_spaces pass: the pieces concatenated, except that when the
    // vocabulary adds a space prefix the first token's piece loses one leading space. So
    // decode(encode(s, false, false)) == s for valid UTF-8 (SentencePiece: unless s contains
    // U+2581); after a BOS the prefix space is kept, exactly as llama.cpp keeps it.
    std::string decode(std::span<const TokenId> ids) const;

    virtual TokenizerKind kind() const = 0;
    std::string_view kind_name() const;  // "llama (SentencePiece)" / "gpt2 (byte-level BPE)"
    const std::string& pre_tokenizer() const { return pre_; }  // "" for SentencePiece

    int32_t vocab_size() const { return static_cast<int32_t>(tokens_.size()); }
    const std::string& token_text(TokenId id) const { return tokens_.at(static_cast<size_t>(id)); }
    TokenType token_type(TokenId id) const { return types_.at(static_cast<size_t>(id)); }

    TokenId bos_id() const { return bos_id_; }  // -1 when the vocabulary has none
    TokenId eos_id() const { return eos_id_; }
    TokenId unk_id() const { return unk_id_; }  // -1 when none
    TokenId eot_id() const { return eot_id_; }  // end of turn; -1 when none
    TokenId eom_id() const { return eom_id_; }  // end of message; -1 when none
    bool add_bos() const { return add_bos_; }
    bool add_eos() const { return add_eos_; }
    // SentencePiece: encode() puts a space before the text (and after special tokens); decode()
    // removes the one leading space of the first token, as llama.cpp's detokenize does.
    bool add_space_prefix() const { return add_space_prefix_; }
    // End of generation: EOS, EOT and the other end-of-generation tokens the vocabulary marks.
    bool is_end_of_generation(TokenId id) const;
    // What the file said that the tokenizer could not use (a special token id outside the
    // vocabulary), one line each; shown once when the model is opened.
    const std::vector<std::string>& load_warnings() const { return load_warnings_; }

protected:
    // Filled once by the constructor of the concrete tokenizer and never modified afterwards
    // (the tokenizers' text indexes view these strings).
    std::vector<std::string> tokens_;
    std::vector<TokenType> types_;
    std::string pre_;
    TokenId bos_id_ = -1;
    TokenId eos_id_ = -1;
    TokenId unk_id_ = -1;
    TokenId eot_id_ = -1;
    TokenId eom_id_ = -1;
    std::vector<TokenId> end_of_generation_ids_;  // sorted
    std::vector<std::string> load_warnings_;
    bool add_bos_ = false;
    bool add_eos_ = false;
    bool add_space_prefix_ = false;
};

}  // namespace inferscope
