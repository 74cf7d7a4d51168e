#include "engine/tokenizer/token_index.h"

#include <algorithm>
#include <bit>
#include <functional>

namespace inferscope::tokenizer_detail {

namespace {

// Power-of-two capacity keeping the load factor at most 3/4: probe chains stay short and the
// tables small (most of their build time is the kernel handing out fresh pages).
size_t capacity_for(size_t count) { return std::bit_ceil(std::max<size_t>(16, count + count / 3 + 1)); }

uint64_t hash_text(std::string_view text) { return std::hash<std::string_view>{}(text); }

// splitmix64's finalizer: spreads the packed id pair over all bits.
uint64_t mix(uint64_t x) {
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace

std::optional<std::pair<TokenId, TokenId>> TokenIndex::build(const std::string* texts, size_t count) {
    texts_ = texts;
    slots_.assign(capacity_for(count), Slot{});
    mask_ = slots_.size() - 1;
    for (size_t id = 0; id < count; ++id) {
        const uint64_t hash = hash_text(texts[id]);
        const auto tag = static_cast<uint32_t>(hash >> 32);
        size_t pos = hash & mask_;
        for (; slots_[pos].id >= 0; pos = (pos + 1) & mask_) {
            if (slots_[pos].tag == tag && texts[slots_[pos].id] == texts[id]) {
                return std::pair<TokenId, TokenId>{slots_[pos].id, static_cast<TokenId>(id)};
            }
        }
        slots_[pos] = {tag, static_cast<TokenId>(id)};
    }
    return std::nullopt;
}

TokenId TokenIndex::find(std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t hash = hash_text(text);
    const auto tag = static_cast<uint32_t>(hash >> 32);
    for (size_t pos = hash & mask_; slots_[pos].id >= 0; pos = (pos + 1) & mask_) {
        if (slots_[pos].tag == tag && texts_[slots_[pos].id] == text) return slots_[pos].id;
    }
    return -1;
}

void PairRankTable::reserve(size_t count) {
    if (capacity_for(count) <= slots_.size()) return;
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity_for(count), Slot{});
    mask_ = slots_.size() - 1;
    for (const Slot& slot : old) {
        if (slot.rank >= 0) slots_[slot_of(slot.left, slot.right)] = slot;
    }
}

size_t PairRankTable::slot_of(uint32_t left, uint32_t right) const {
    size_t pos = mix((uint64_t{left} << 32) | right) & mask_;
    while (slots_[pos].rank >= 0 && (slots_[pos].left != left || slots_[pos].right != right)) pos = (pos + 1) & mask_;
    return pos;
}

void PairRankTable::insert(uint32_t left, uint32_t right, int32_t rank) {
    if (capacity_for(used_ + 1) > slots_.size()) reserve(2 * (used_ + 1));
    Slot& slot = slots_[slot_of(left, right)];
    if (slot.rank >= 0) return;
    slot = {left, right, rank};
    ++used_;
}

int32_t PairRankTable::find(uint32_t left, uint32_t right) const {
    if (slots_.empty()) return -1;
    return slots_[slot_of(left, right)].rank;
}

}  // namespace inferscope::tokenizer_detail
