#pragma once
// The merge loop that BPE and SentencePiece both run over a piece of text. Symbols start as
// its characters (UTF-8 sequences by their lead byte, unvalidated, as in llama.cpp) and form
// a linked list; a queue holds the candidate merges of neighbours, the lowest key first
// (ties: leftmost). A candidate is stale once either side took part in another merge: the
// symbols are contiguous, so comparing lengths is the same as comparing their text.
#include <algorithm>
#include <cstddef>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "engine/tokenizer/unicode_text.h"

namespace inferscope::tokenizer_detail {

struct MergeSymbol {
    int prev;
    int next;
    size_t offset;
    size_t length;  // 0 once merged into its left neighbour
};

template <typename Key>
class SymbolMerge {
public:
    explicit SymbolMerge(std::string_view text) : text_(text) {
        size_t offset = 0;
        while (offset < text_.size()) {
            const size_t length =
                std::min(utf8_sequence_length(static_cast<unsigned char>(text_[offset])), text_.size() - offset);
            const int index = static_cast<int>(symbols_.size());
            offset += length;
            symbols_.push_back({index - 1, offset == text_.size() ? -1 : index + 1, offset - length, length});
        }
    }

    // Merges until no candidate is left. `key_of(left, right)` is the merge's key for two
    // neighbouring symbol indices, or nullopt where they cannot merge; `merged(left)` follows
    // each merge into symbol `left`.
    template <typename KeyOf, typename Merged>
    void run(KeyOf key_of, Merged merged) {
        const auto offer = [&](int left, int right) {
            if (left == -1 || right == -1) return;
            if (const std::optional<Key> key = key_of(left, right)) {
                queue_.push({left, right, *key, symbol(left).length + symbol(right).length});
            }
        };
        for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) offer(i - 1, i);
        while (!queue_.empty()) {
            const Candidate candidate = queue_.top();
            queue_.pop();
            MergeSymbol& left = symbols_[static_cast<size_t>(candidate.left)];
            MergeSymbol& right = symbols_[static_cast<size_t>(candidate.right)];
            if (left.length == 0 || right.length == 0 || left.length + right.length != candidate.size) continue;
            left.length += right.length;
            right.length = 0;
            left.next = right.next;
            if (right.next >= 0) symbols_[static_cast<size_t>(right.next)].prev = candidate.left;
            merged(candidate.left);
            offer(left.prev, candidate.left);
            offer(candidate.left, left.next);
        }
    }

    const MergeSymbol& symbol(int index) const { return symbols_[static_cast<size_t>(index)]; }
    std::string_view text_of(const MergeSymbol& s) const { return text_.substr(s.offset, s.length); }
    // The text two neighbours would make together.
    std::string_view joined(int left, int right) const {
        return text_.substr(symbol(left).offset, symbol(left).length + symbol(right).length);
    }
    // The symbols left after the merges, in text order.
    std::vector<int> remaining() const {
        std::vector<int> indices;
        for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbol(i).next) indices.push_back(i);
        return indices;
    }
    int size() const { return static_cast<int>(symbols_.size()); }

private:
    struct Candidate {
        int left;
        int right;
        Key key;
        size_t size;
    };
    struct LaterFirst {
        bool operator()(const Candidate& a, const Candidate& b) const {
            return b.key < a.key || (!(a.key < b.key) && a.left > b.left);
        }
    };

    std::string_view text_;
    std::vector<MergeSymbol> symbols_;
    std::priority_queue<Candidate, std::vector<Candidate>, LaterFirst> queue_;
};

}  // namespace inferscope::tokenizer_detail
