#include "engine/tokenizer/bpe_tokenizer.h"

#include <optional>

#include "engine/core/error.h"
#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/symbol_merge.h"
#include "engine/tokenizer/unicode_text.h"

namespace inferscope::tokenizer_detail {

namespace {

// One word through the merge loop (symbol_merge.h), lowest merge rank first. The word is
// byte-level encoded, so its characters are one per input byte; each symbol keeps the
// BpeMerges::symbol_id of its text.
class BpeMerger {
public:
    BpeMerger(const BpeTokenizer& tokenizer, std::string_view word) : tokenizer_(tokenizer), merge_(word) {
        ids_.reserve(static_cast<size_t>(merge_.size()));
        for (int i = 0; i < merge_.size(); ++i) ids_.push_back(tokenizer_.symbol_id(merge_.text_of(merge_.symbol(i))));
    }

    void run(std::vector<TokenId>& out) {
        merge_.run(
            [this](int left, int right) -> std::optional<int32_t> {
                const TokenId l = ids_[static_cast<size_t>(left)];
                const TokenId r = ids_[static_cast<size_t>(right)];
                if (l < 0 || r < 0) return std::nullopt;  // no merge has this text as a half
                const int32_t rank = tokenizer_.merge_rank(l, r);
                return rank >= 0 ? std::optional<int32_t>(rank) : std::nullopt;
            },
            [this](int left) { ids_[static_cast<size_t>(left)] = tokenizer_.symbol_id(merge_.text_of(merge_.symbol(left))); });
        for (const int index : merge_.remaining()) emit(index, out);
    }

private:
    // A final symbol is its token; failing that (merges whose result is not in the
    // vocabulary) llama.cpp looks up each of its bytes alone and drops those that are not
    // tokens, which for multi-byte characters means dropping them.
    void emit(int index, std::vector<TokenId>& out) const {
        const TokenId id = ids_[static_cast<size_t>(index)];
        if (id >= 0 && id < tokenizer_.vocab_size()) {
            out.push_back(id);
            return;
        }
        const std::string_view text = merge_.text_of(merge_.symbol(index));
        for (size_t i = 0; i < text.size(); ++i) {
            if (const TokenId token = tokenizer_.token_for(text.substr(i, 1)); token != kNoToken) out.push_back(token);
        }
    }

    const BpeTokenizer& tokenizer_;
    SymbolMerge<int32_t> merge_;
    std::vector<TokenId> ids_;  // [symbols] BpeMerges::symbol_id of each symbol's text
};

}  // namespace

BpeMerges BpeMerges::read(const GgufFile& file, const TokenIndex& index, size_t n_tokens) {
    const std::string key = "tokenizer.ggml.merges";
    const GgufValue* value = file.find(key);
    if (!value) fail_metadata(file, key, "required for tokenizer.ggml.model \"gpt2\" but missing");
    BpeMerges merges;
    try {
        const GgufArray& items = value->as_array();
        merges.ranks_.reserve(items.size());
        for (size_t i = 0; i < items.size(); ++i) {
            const std::string_view merge = items.string_at(i);
            const size_t space = merge.size() < 2 ? std::string_view::npos : merge.find(' ', 1);
            // Without a space (or with an empty half) an entry can never match two symbols.
            if (space == std::string_view::npos || space + 1 == merge.size()) continue;
            const TokenId left = merges.half_id(merge.substr(0, space), index, n_tokens);
            const TokenId right = merges.half_id(merge.substr(space + 1), index, n_tokens);
            merges.ranks_.insert(static_cast<uint32_t>(left), static_cast<uint32_t>(right), static_cast<int32_t>(i));
        }
    } catch (const InvalidArgument& e) {
        fail_metadata(file, key, e.what());
    }
    return merges;
}

TokenId BpeMerges::half_id(std::string_view text, const TokenIndex& index, size_t n_tokens) {
    if (const TokenId id = index.find(text); id >= 0) return id;
    const auto [it, inserted] =
        extra_ids_.try_emplace(std::string(text), static_cast<TokenId>(n_tokens + extra_ids_.size()));
    return it->second;
}

TokenId BpeMerges::symbol_id(std::string_view text, const TokenIndex& index) const {
    if (const TokenId id = index.find(text); id >= 0 || extra_ids_.empty()) return id;
    const auto it = extra_ids_.find(text);
    return it == extra_ids_.end() ? kNoToken : it->second;
}

BpeTokenizer::BpeTokenizer(Vocabulary&& vocab, BpeMerges merges, std::unique_ptr<PreTokenizer> pre_tokenizer,
                           std::string pre_tokenizer_name)
    : VocabularyTokenizer(std::move(vocab)), merges_(std::move(merges)), pre_tokenizer_(std::move(pre_tokenizer)) {
    pre_ = std::move(pre_tokenizer_name);
}

void BpeTokenizer::encode_word(const std::string& word, std::vector<TokenId>& out) const {
    if (pre_tokenizer_->ignore_merges()) {
        if (const TokenId token = find_token(word); token != kNoToken) {
            out.push_back(token);
            return;
        }
    }
    BpeMerger(*this, word).run(out);
}

std::vector<TokenId> BpeTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<TokenId> out;
    if (add_special && add_bos_) out.push_back(bos_id_);
    for (const TextFragment& fragment : split_special(text, parse_special)) {
        if (fragment.is_token()) {
            out.push_back(fragment.token);
            continue;
        }
        for (const std::string& word : pre_tokenizer_->split(text.substr(fragment.offset, fragment.length))) {
            encode_word(word, out);
        }
    }
    if (add_special && add_eos_) out.push_back(eos_id_);
    return out;
}

// llama.cpp's llama_decode_text: each character maps back to its byte; a character outside
// the byte-level alphabet is spelled out as "[UNK_BYTE_0x<utf8 hex><token text>]".
std::string BpeTokenizer::normal_token_piece(const std::string& text) const {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char32_t cp : decode_utf8_lenient(text)) {
        if (const auto byte = unicode_to_byte(cp)) {
            out.push_back(static_cast<char>(*byte));
            continue;
        }
        std::string utf8;
        append_utf8(utf8, cp);
        out += "[UNK_BYTE_0x";
        for (const char c : utf8) {
            out.push_back(kHex[static_cast<uint8_t>(c) >> 4]);
            out.push_back(kHex[static_cast<uint8_t>(c) & 15]);
        }
        out += text + "]";
    }
    return out;
}

std::unique_ptr<Tokenizer> make_bpe_tokenizer(const GgufFile& file) {
    const std::string pre_name = file.get_string("tokenizer.ggml.pre", "");
    auto pre_tokenizer = std::make_unique<PreTokenizer>(pre_name);
    // llama.cpp's BPE defaults: BOS = EOS = 11 (dropped when out of range), no UNK, BOS added
    // only for the pre-tokenizers that say so (Llama 3, Tekken).
    VocabularyDefaults defaults;
    defaults.bos = pre_tokenizer->has_no_bos() ? kNoToken : 11;
    defaults.eos = 11;
    defaults.add_bos = pre_tokenizer->default_add_bos();
    Vocabulary vocab = load_vocabulary(file, defaults);
    BpeMerges merges = BpeMerges::read(file, vocab.index, vocab.tokens.size());
    return std::make_unique<BpeTokenizer>(std::move(vocab), std::move(merges), std::move(pre_tokenizer),
                                          pre_name.empty() ? "default" : pre_name);
}

}  // namespace inferscope::tokenizer_detail
