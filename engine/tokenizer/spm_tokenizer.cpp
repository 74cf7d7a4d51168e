#include "engine/tokenizer/spm_tokenizer.h"

#include <optional>
#include <unordered_map>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/symbol_merge.h"

namespace inferscope::tokenizer_detail {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581 LOWER ONE EIGHTH BLOCK

std::string escape_spaces(std::string_view text) {
    std::string out;
    out.reserve(text.size() + text.size() / 2);
    for (const char c : text) {
        if (c == ' ') {
            out += kSpaceMarker;
        } else {
            out.push_back(c);
        }
    }
    return out;
}

// One fragment through the merge loop (symbol_merge.h), best token score first.
class SpmMerger {
public:
    SpmMerger(const SpmTokenizer& tokenizer, std::string_view text) : tokenizer_(tokenizer), merge_(text) {}

    void run(std::vector<TokenId>& out) {
        merge_.run(
            [this](int left, int right) -> std::optional<float> {
                const std::string_view joined = merge_.joined(left, right);
                const TokenId token = tokenizer_.token_for(joined);
                if (token == kNoToken) return std::nullopt;
                // Remember how this text was formed, to split it again if it is not a token after all.
                reverse_merges_[std::string(joined)] = {left, right};
                return -tokenizer_.token_score(token);
            },
            [](int) {});
        for (const int index : merge_.remaining()) resegment(index, out);
    }

private:
    // Emits a final symbol: its token, or the two symbols it was merged from, or its bytes.
    void resegment(int index, std::vector<TokenId>& out) const {
        const std::string_view text = merge_.text_of(merge_.symbol(index));
        if (const TokenId token = tokenizer_.token_for(text); token != kNoToken) {
            out.push_back(token);
            return;
        }
        const auto it = reverse_merges_.find(std::string(text));
        if (it == reverse_merges_.end()) {
            for (const char byte : text) {
                const TokenId token = tokenizer_.byte_token(static_cast<uint8_t>(byte));
                if (token != kNoToken) out.push_back(token);
            }
            return;
        }
        resegment(it->second.first, out);
        resegment(it->second.second, out);
    }

    const SpmTokenizer& tokenizer_;
    SymbolMerge<float> merge_;
    std::unordered_map<std::string, std::pair<int, int>> reverse_merges_;
};

std::string hex_byte_token(uint8_t byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    return std::string("<0x") + kHex[byte >> 4] + kHex[byte & 15] + ">";
}

}  // namespace

SpmTokenizer::SpmTokenizer(Vocabulary&& vocab) : VocabularyTokenizer(std::move(vocab)) {
    for (int byte = 0; byte < 256; ++byte) {
        TokenId token = find_token(hex_byte_token(static_cast<uint8_t>(byte)));
        if (token == kNoToken) token = find_token(std::string(1, static_cast<char>(byte)));
        byte_tokens_[static_cast<size_t>(byte)] = token == kNoToken ? unk_id_ : token;
    }
}

void SpmTokenizer::encode_escaped(std::string_view text, std::vector<TokenId>& out) const {
    SpmMerger(*this, text).run(out);
}

std::vector<TokenId> SpmTokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    std::vector<TokenId> out;
    if (add_special && add_bos_) out.push_back(bos_id_);
    // Like llama.cpp, the space prefix goes before the first text fragment and before every
    // fragment that follows a special token.
    bool after_special = true;
    for (const TextFragment& fragment : split_special(text, parse_special)) {
        if (fragment.is_token()) {
            out.push_back(fragment.token);
            after_special = true;
            continue;
        }
        std::string piece = (add_space_prefix_ && after_special) ? " " : "";
        piece += text.substr(fragment.offset, fragment.length);
        encode_escaped(escape_spaces(piece), out);
        after_special = false;
    }
    if (add_special && add_eos_) out.push_back(eos_id_);
    return out;
}

std::string SpmTokenizer::normal_token_piece(const std::string& text) const {
    std::string out;
    out.reserve(text.size());
    for (size_t pos = 0; pos < text.size();) {
        if (text.compare(pos, kSpaceMarker.size(), kSpaceMarker) == 0) {
            out.push_back(' ');
            pos += kSpaceMarker.size();
        } else {
            out.push_back(text[pos++]);
        }
    }
    return out;
}

std::unique_ptr<Tokenizer> make_spm_tokenizer(const GgufFile& file) {
    VocabularyDefaults defaults;
    defaults.bos = 1;
    defaults.eos = 2;
    defaults.unk = 0;
    defaults.add_bos = true;
    defaults.add_space_prefix = true;
    return std::make_unique<SpmTokenizer>(load_vocabulary(file, defaults));
}

}  // namespace inferscope::tokenizer_detail
