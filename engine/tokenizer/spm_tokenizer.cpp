#include "engine/tokenizer/spm_tokenizer.h"

#include <queue>
#include <unordered_map>

#include "engine/gguf/gguf_file.h"
#include "engine/tokenizer/unicode_text.h"

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

// One run of the merge loop over one fragment. Symbols form a linked list over the text;
// the queue holds candidate merges of neighbours, best score first (ties: leftmost).
class SpmMerger {
public:
    SpmMerger(const SpmTokenizer& tokenizer, std::string_view text) : tokenizer_(tokenizer), text_(text) {}

    void run(std::vector<TokenId>& out) {
        split_into_characters();
        for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) try_add_bigram(i - 1, i);
        while (!queue_.empty()) {
            const Bigram bigram = queue_.top();
            queue_.pop();
            Symbol& left = symbols_[static_cast<size_t>(bigram.left)];
            Symbol& right = symbols_[static_cast<size_t>(bigram.right)];
            // Skip candidates made stale by an earlier merge of either side.
            if (left.length == 0 || right.length == 0 || left.length + right.length != bigram.size) continue;
            left.length += right.length;
            right.length = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[static_cast<size_t>(right.next)].prev = bigram.left;
            try_add_bigram(left.prev, bigram.left);
            try_add_bigram(bigram.left, left.next);
        }
        for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[static_cast<size_t>(i)].next) {
            resegment(symbols_[static_cast<size_t>(i)], out);
        }
    }

private:
    struct Symbol {
        int prev;
        int next;
        size_t offset;
        size_t length;
    };
    struct Bigram {
        int left;
        int right;
        float score;
        size_t size;
    };
    struct LowerPriority {
        bool operator()(const Bigram& a, const Bigram& b) const {
            return a.score < b.score || (a.score == b.score && a.left > b.left);
        }
    };

    std::string_view text_of(const Symbol& symbol) const { return text_.substr(symbol.offset, symbol.length); }

    // "Characters" are UTF-8 sequences by their lead byte, unvalidated, as in llama.cpp.
    void split_into_characters() {
        size_t offset = 0;
        while (offset < text_.size()) {
            const size_t length =
                std::min(utf8_sequence_length(static_cast<unsigned char>(text_[offset])), text_.size() - offset);
            const int index = static_cast<int>(symbols_.size());
            offset += length;
            symbols_.push_back({index - 1, offset == text_.size() ? -1 : index + 1, offset - length, length});
        }
    }

    void try_add_bigram(int left, int right) {
        if (left == -1 || right == -1) return;
        const Symbol& l = symbols_[static_cast<size_t>(left)];
        const std::string_view joined = text_.substr(l.offset, l.length + symbols_[static_cast<size_t>(right)].length);
        const TokenId token = tokenizer_.token_for(joined);
        if (token == kNoToken) return;
        queue_.push({left, right, tokenizer_.token_score(token), joined.size()});
        // Remember how this text was formed, to split it again if it is not a token after all.
        reverse_merges_[std::string(joined)] = {left, right};
    }

    // Emits a final symbol: its token, or the two symbols it was merged from, or its bytes.
    void resegment(const Symbol& symbol, std::vector<TokenId>& out) const {
        const std::string_view text = text_of(symbol);
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
        resegment(symbols_[static_cast<size_t>(it->second.first)], out);
        resegment(symbols_[static_cast<size_t>(it->second.second)], out);
    }

    const SpmTokenizer& tokenizer_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
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
