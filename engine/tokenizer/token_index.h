#pragma once
// Flat (open addressing, linear probing) hash tables for the two lookups on the tokenizers'
// hot paths. Vocabularies reach ~150k tokens and ~150k merges; node-based maps spend most of
// the load time allocating nodes, these allocate one array each.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope::tokenizer_detail {

// Token text -> id. Slots hold only a hash tag and the id; the texts are read from the
// token array the index was built over.
class TokenIndex {
public:
    TokenIndex() = default;

    // Indexes texts[0..count). `texts` is the buffer of the tokenizer's token vector, which
    // must stay alive and unchanged while the index is used (moving the vector is fine: its
    // buffer moves with it). Returns the ids of the first duplicate text found, if any.
    std::optional<std::pair<TokenId, TokenId>> build(const std::string* texts, size_t count);

    // The id whose text equals `text`, or -1.
    TokenId find(std::string_view text) const;

private:
    struct Slot {
        uint32_t tag = 0;
        TokenId id = -1;  // -1: empty
    };
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    const std::string* texts_ = nullptr;
};

// (left id, right id) -> merge rank, for byte-level BPE.
class PairRankTable {
public:
    void reserve(size_t count);
    // Keeps the rank already stored for the pair (the first occurrence wins, as in llama.cpp).
    void insert(uint32_t left, uint32_t right, int32_t rank);
    // The rank, or -1.
    int32_t find(uint32_t left, uint32_t right) const;

private:
    struct Slot {
        uint32_t left = 0;
        uint32_t right = 0;
        int32_t rank = -1;  // -1: empty
    };
    size_t slot_of(uint32_t left, uint32_t right) const;
    std::vector<Slot> slots_;
    size_t mask_ = 0;
    size_t used_ = 0;
};

}  // namespace inferscope::tokenizer_detail
