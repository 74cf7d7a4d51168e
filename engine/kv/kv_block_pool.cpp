#include "engine/kv/kv_block_pool.h"

#define XXH_STATIC_LINKING_ONLY  // XXH64_state_t on the stack
#include <xxhash.h>

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace inferscope {
namespace {
// The parent hash of a sequence's first block.
constexpr BlockHash kRootHash = 0x9E3779B97F4A7C15ull;
}  // namespace

int sliding_window_blocks(int window_tokens, int block_tokens, int batch_tokens) {
    const int held_tokens = window_tokens + block_tokens + batch_tokens;
    return (held_tokens + block_tokens - 1) / block_tokens + 1;
}

const char* kv_dtype_name(KvDtype dtype) { return dtype == KvDtype::F16 ? "f16" : "f32"; }
int kv_dtype_bytes(KvDtype dtype) { return dtype == KvDtype::F16 ? 2 : 4; }

KvBlockPool::KvBlockPool(const KvLayout& layout) : layout_(layout) {
    if (layout.block_tokens <= 0 || layout.n_blocks < 0 || layout.window_tokens < 0) {
        throw InvalidArgument("KV pool needs a positive block size and non-negative block count and window");
    }
    blocks_.resize(static_cast<size_t>(layout.n_blocks));
    for (int32_t b = 0; b < layout.n_blocks; ++b) queue_push_back(b);  // a fresh pool hands out 0, 1, 2, ...
    free_count_ = layout.n_blocks;
}

KvBlockPool::Sequence& KvBlockPool::sequence(SeqId seq) {
    const auto it = sequences_.find(seq);
    if (it == sequences_.end()) throw InvalidArgument("sequence " + std::to_string(seq) + " is not in the KV cache");
    return it->second;
}

const KvBlockPool::Sequence& KvBlockPool::sequence(SeqId seq) const {
    return const_cast<KvBlockPool*>(this)->sequence(seq);
}

void KvBlockPool::add_sequence(SeqId seq) {
    if (!sequences_.emplace(seq, Sequence{}).second) {
        throw InvalidArgument("sequence " + std::to_string(seq) + " already exists in the KV cache");
    }
}

void KvBlockPool::fork_sequence(SeqId parent, SeqId child) {
    const Sequence copy = sequence(parent);
    if (has_sequence(child)) throw InvalidArgument("sequence " + std::to_string(child) + " already exists in the KV cache");
    for (int32_t b : copy.blocks) {
        if (b != kReleasedBlock) ++blocks_[static_cast<size_t>(b)].ref_count;
    }
    sequences_.emplace(child, copy);
}

void KvBlockPool::free_sequence(SeqId seq) {
    Sequence& s = sequence(seq);
    // Last block first: the queue's head is evicted first, and a sequence's tail is less
    // likely to be shared again than its prefix.
    for (auto it = s.blocks.rbegin(); it != s.blocks.rend(); ++it) {
        if (*it != kReleasedBlock) release_block(*it);
    }
    sequences_.erase(seq);
}

BlockHash KvBlockPool::hash_block(BlockHash parent, std::span<const TokenId> tokens) const {
    XXH64_state_t state;
    XXH64_reset(&state, 0);
    XXH64_update(&state, &parent, sizeof parent);
    XXH64_update(&state, tokens.data(), tokens.size_bytes());
    return XXH64_digest(&state);
}

std::optional<int32_t> KvBlockPool::lookup(BlockHash hash, std::span<const TokenId> tokens) const {
    const auto it = cache_.find(hash);
    if (it == cache_.end()) return std::nullopt;
    const Block& block = blocks_[static_cast<size_t>(it->second)];
    // A 64-bit hash collision must not hand out another prompt's keys and values.
    if (!std::equal(tokens.begin(), tokens.end(), block.tokens.begin(), block.tokens.end())) return std::nullopt;
    return it->second;
}

std::vector<BlockHash> KvBlockPool::block_hashes(std::span<const TokenId> tokens, size_t n_blocks) const {
    const auto block_tokens = static_cast<size_t>(layout_.block_tokens);
    std::vector<BlockHash> hashes;
    BlockHash parent = kRootHash;
    for (size_t b = 0; b < n_blocks; ++b) {
        parent = hash_block(parent, tokens.subspan(b * block_tokens, block_tokens));
        hashes.push_back(parent);
    }
    return hashes;
}

// The first block a sliding-window sequence keeps when its next position is
// `next_position`: the window of that position, widened by `slack_tokens`.
int KvBlockPool::first_window_block(int next_position, int slack_tokens) const {
    return std::max(0, next_position + 1 - layout_.window_tokens - slack_tokens) / layout_.block_tokens;
}

void KvBlockPool::take_cached(int32_t block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.ref_count == 0) {
        queue_remove(block);
        --free_count_;
    }
    ++b.ref_count;
}

int KvBlockPool::attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens) {
    Sequence& s = sequence(seq);
    if (!s.tokens.empty()) throw InvalidArgument("a cached prefix can only start an empty sequence");
    if (layout_.window_tokens > 0) return attach_window(s, tokens);
    const auto block_tokens = static_cast<size_t>(layout_.block_tokens);
    BlockHash parent = kRootHash;
    // Whole blocks only, and the last token is always left to compute (its logits are needed).
    while ((s.blocks.size() + 1) * block_tokens + 1 <= tokens.size()) {
        const auto chunk = tokens.subspan(s.blocks.size() * block_tokens, block_tokens);
        const BlockHash hash = hash_block(parent, chunk);
        const std::optional<int32_t> hit = lookup(hash, chunk);
        if (!hit) break;
        take_cached(*hit);
        s.blocks.push_back(*hit);
        s.tokens.insert(s.tokens.end(), chunk.begin(), chunk.end());
        parent = hash;
    }
    s.committed_blocks = s.blocks.size();
    return static_cast<int>(s.tokens.size());
}

// The longest whole-block prefix whose window (the blocks the next position reads) is
// cached; the blocks before it are left released.
int KvBlockPool::attach_window(Sequence& s, std::span<const TokenId> tokens) {
    const auto block_tokens = static_cast<size_t>(layout_.block_tokens);
    size_t candidates = 0;
    while ((candidates + 1) * block_tokens + 1 <= tokens.size()) ++candidates;
    const std::vector<BlockHash> hashes = block_hashes(tokens, candidates);
    std::vector<std::optional<int32_t>> hits;
    for (size_t b = 0; b < candidates; ++b) hits.push_back(lookup(hashes[b], tokens.subspan(b * block_tokens, block_tokens)));
    for (size_t n = candidates; n > 0; --n) {
        const auto first = static_cast<size_t>(first_window_block(static_cast<int>(n * block_tokens), 0));
        const bool window_cached = std::all_of(hits.begin() + static_cast<std::ptrdiff_t>(first),
                                               hits.begin() + static_cast<std::ptrdiff_t>(n),
                                               [](const std::optional<int32_t>& hit) { return hit.has_value(); });
        if (!window_cached) continue;
        s.blocks.assign(n, kReleasedBlock);
        for (size_t b = first; b < n; ++b) {
            take_cached(*hits[b]);
            s.blocks[b] = *hits[b];
        }
        s.tokens.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n * block_tokens));
        s.committed_blocks = n;
        break;
    }
    return static_cast<int>(s.tokens.size());
}

// Whether the sequence's next token goes into a block it shares with another sequence
// (which must then be copied first).
bool KvBlockPool::next_write_is_shared(const Sequence& s) const {
    const auto written_block = s.tokens.size() / static_cast<size_t>(layout_.block_tokens);
    return written_block < s.blocks.size() && blocks_[static_cast<size_t>(s.blocks[written_block])].ref_count > 1;
}

// Blocks appending `n_tokens` takes from the free queue: the new ones, and the copy of a
// shared last block.
int KvBlockPool::blocks_to_append(const Sequence& s, int n_tokens) const {
    const int new_length = static_cast<int>(s.tokens.size()) + n_tokens;
    return blocks_needed(new_length) - static_cast<int>(s.blocks.size()) + (next_write_is_shared(s) ? 1 : 0);
}

void KvBlockPool::check_append(SeqId seq, int n_tokens) const {
    const Sequence& s = sequence(seq);
    const int extra = blocks_to_append(s, n_tokens);
    if (extra <= free_count_) return;
    throw CapacityError("KV cache is full: sequence " + std::to_string(seq) + " needs " + std::to_string(extra) +
                        " more blocks of " + std::to_string(layout_.block_tokens) + " tokens to reach " +
                        std::to_string(s.tokens.size() + static_cast<size_t>(n_tokens)) + " tokens, but only " +
                        std::to_string(free_count_) + " of " + std::to_string(layout_.n_blocks) + " blocks are free" +
                        (layout_.window_tokens > 0 ? " (sliding-window layers)" : ""));
}

std::vector<BlockCopy> KvBlockPool::append(SeqId seq, std::span<const TokenId> tokens) {
    Sequence& s = sequence(seq);
    if (tokens.empty()) return {};
    check_append(seq, static_cast<int>(tokens.size()));
    const int old_length = static_cast<int>(s.tokens.size());
    const int new_length = old_length + static_cast<int>(tokens.size());
    const size_t written_block = static_cast<size_t>(old_length / layout_.block_tokens);
    const bool writes_into_existing = written_block < s.blocks.size();
    std::vector<BlockCopy> copies;
    if (next_write_is_shared(s)) {
        const int32_t shared = s.blocks[written_block];
        const int32_t copy = allocate_block();
        blocks_[static_cast<size_t>(copy)].filled = old_length % layout_.block_tokens;
        copies.push_back({shared, copy});
        release_block(shared);
        s.blocks[written_block] = copy;
    } else if (writes_into_existing) {
        uncache(s.blocks[written_block]);  // its contents are about to change
    }
    const size_t first_new = s.blocks.size();
    while (static_cast<int>(s.blocks.size()) < blocks_needed(new_length)) s.blocks.push_back(allocate_block());
    // The same blocks, in ascending order: freed sequences return their blocks last first, so
    // the queue hands them out descending, and the attention kernels walk a sequence's blocks
    // markedly slower backwards through memory than forwards.
    std::sort(s.blocks.begin() + static_cast<std::ptrdiff_t>(first_new), s.blocks.end());
    for (int pos = old_length; pos < new_length; ++pos) {
        Block& block = blocks_[static_cast<size_t>(s.blocks[static_cast<size_t>(pos / layout_.block_tokens)])];
        block.filled = std::max(block.filled, pos % layout_.block_tokens + 1);
    }
    s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
    return copies;
}

void KvBlockPool::commit(SeqId seq) {
    Sequence& s = sequence(seq);
    const auto block_tokens = static_cast<size_t>(layout_.block_tokens);
    const size_t full_blocks = s.tokens.size() / block_tokens;
    BlockHash parent = kRootHash;
    for (size_t b = 0; b < full_blocks; ++b) {
        const auto chunk = std::span<const TokenId>(s.tokens).subspan(b * block_tokens, block_tokens);
        const BlockHash hash = hash_block(parent, chunk);
        parent = hash;
        if (b < s.committed_blocks || s.blocks[b] == kReleasedBlock) continue;
        Block& block = blocks_[static_cast<size_t>(s.blocks[b])];
        // Already findable (the same content in another block, or this one): nothing to add.
        if (!block.hash && !lookup(hash, chunk)) {
            block.hash = hash;
            block.tokens.assign(chunk.begin(), chunk.end());
            cache_.emplace(hash, s.blocks[b]);
        }
    }
    s.committed_blocks = full_blocks;
    release_outside_window(s);
}

void KvBlockPool::release_outside_window(Sequence& s) {
    if (layout_.window_tokens <= 0) return;
    const auto first = static_cast<size_t>(first_window_block(static_cast<int>(s.tokens.size()), layout_.block_tokens));
    for (size_t b = 0; b < first && b < s.blocks.size(); ++b) {
        if (s.blocks[b] == kReleasedBlock) continue;
        release_block(s.blocks[b]);
        s.blocks[b] = kReleasedBlock;
    }
}

void KvBlockPool::truncate(SeqId seq, int n_tokens) {
    Sequence& s = sequence(seq);
    if (n_tokens < 0) throw InvalidArgument("cannot truncate a sequence to a negative length");
    if (n_tokens >= static_cast<int>(s.tokens.size())) return;
    const std::vector<std::pair<size_t, int32_t>> regained = window_to_regain(s, seq, n_tokens);
    const auto kept = static_cast<size_t>(blocks_needed(n_tokens));
    while (s.blocks.size() > kept) {
        if (s.blocks.back() != kReleasedBlock) release_block(s.blocks.back());
        s.blocks.pop_back();
    }
    for (const auto& [index, block] : regained) {
        take_cached(block);
        s.blocks[index] = block;
    }
    s.tokens.resize(static_cast<size_t>(n_tokens));
    s.committed_blocks = std::min(s.committed_blocks, static_cast<size_t>(n_tokens / layout_.block_tokens));
    const int in_last = n_tokens % layout_.block_tokens;
    if (in_last != 0) {
        Block& last = blocks_[static_cast<size_t>(s.blocks.back())];
        if (last.ref_count == 1) {
            uncache(s.blocks.back());  // a cached block is always whole
            last.filled = in_last;
        }
    }
}

// The released blocks a sliding-window sequence cut back to `n_tokens` must hold again
// (table index, cached block); CapacityError when one of them has been recycled.
std::vector<std::pair<size_t, int32_t>> KvBlockPool::window_to_regain(const Sequence& s, SeqId seq, int n_tokens) const {
    std::vector<std::pair<size_t, int32_t>> regained;
    if (layout_.window_tokens <= 0 || n_tokens == 0) return regained;
    const auto block_tokens = static_cast<size_t>(layout_.block_tokens);
    const auto first = static_cast<size_t>(first_window_block(n_tokens, 0));
    const auto end = static_cast<size_t>(blocks_needed(n_tokens));
    std::vector<BlockHash> hashes;
    for (size_t b = first; b < end; ++b) {
        if (s.blocks[b] != kReleasedBlock) continue;
        if (hashes.empty()) hashes = block_hashes(s.tokens, end);
        const auto chunk = std::span<const TokenId>(s.tokens).subspan(b * block_tokens, block_tokens);
        const std::optional<int32_t> hit = lookup(hashes[b], chunk);
        if (!hit) {
            throw CapacityError("sequence " + std::to_string(seq) + " cannot be cut back to " + std::to_string(n_tokens) +
                                " tokens: the sliding-window layers' keys and values for positions " +
                                std::to_string(b * block_tokens) + ".." + std::to_string((b + 1) * block_tokens - 1) +
                                " were released and their block reused");
        }
        regained.emplace_back(b, *hit);
    }
    return regained;
}

int32_t KvBlockPool::allocate_block() {
    const int32_t block = queue_head_;
    queue_remove(block);
    --free_count_;
    uncache(block);  // eviction of a cached prefix
    Block& b = blocks_[static_cast<size_t>(block)];
    b.ref_count = 1;
    b.filled = 0;
    return block;
}

void KvBlockPool::release_block(int32_t block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (--b.ref_count > 0) return;
    queue_push_back(block);
    ++free_count_;
}

void KvBlockPool::uncache(int32_t block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (!b.hash) return;
    cache_.erase(*b.hash);
    b.hash.reset();
    b.tokens.clear();
}

void KvBlockPool::queue_push_back(int32_t block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    b.prev = queue_tail_;
    b.next = kNone;
    if (queue_tail_ != kNone) {
        blocks_[static_cast<size_t>(queue_tail_)].next = block;
    } else {
        queue_head_ = block;
    }
    queue_tail_ = block;
}

void KvBlockPool::queue_remove(int32_t block) {
    Block& b = blocks_[static_cast<size_t>(block)];
    if (b.prev != kNone) {
        blocks_[static_cast<size_t>(b.prev)].next = b.next;
    } else {
        queue_head_ = b.next;
    }
    if (b.next != kNone) {
        blocks_[static_cast<size_t>(b.next)].prev = b.prev;
    } else {
        queue_tail_ = b.prev;
    }
    b.prev = b.next = kNone;
}

std::optional<BlockHash> KvBlockPool::block_hash(int32_t block) const { return blocks_.at(static_cast<size_t>(block)).hash; }

std::vector<int32_t> KvBlockPool::free_queue() const {
    std::vector<int32_t> order;
    for (int32_t b = queue_head_; b != kNone; b = blocks_[static_cast<size_t>(b)].next) order.push_back(b);
    return order;
}

int KvBlockPool::sequence_length(SeqId seq) const { return static_cast<int>(sequence(seq).tokens.size()); }
std::span<const int32_t> KvBlockPool::block_table(SeqId seq) const { return sequence(seq).blocks; }
std::span<const TokenId> KvBlockPool::sequence_tokens(SeqId seq) const { return sequence(seq).tokens; }

std::vector<SeqId> KvBlockPool::sequence_ids() const {
    std::vector<SeqId> ids;
    for (const auto& [id, s] : sequences_) ids.push_back(id);
    return ids;
}

int64_t KvBlockPool::tokens_in_use() const {
    int64_t total = 0;
    for (const auto& [id, s] : sequences_) {
        const auto released = std::count(s.blocks.begin(), s.blocks.end(), kReleasedBlock);
        total += static_cast<int64_t>(s.tokens.size()) - released * layout_.block_tokens;
    }
    return total;
}

uint64_t KvBlockPool::bytes_in_use() const {
    uint64_t slots = 0;
    for (const Block& b : blocks_) {
        if (b.ref_count > 0) slots += static_cast<uint64_t>(b.filled);
    }
    return slots * layout_.bytes_per_token();
}

uint64_t KvBlockPool::bytes_shared() const {
    const uint64_t logical = static_cast<uint64_t>(tokens_in_use()) * layout_.bytes_per_token();
    const uint64_t physical = bytes_in_use();
    return logical > physical ? logical - physical : 0;
}

uint64_t KvBlockPool::bytes_if_reserved_per_sequence(int context_tokens) const {
    return static_cast<uint64_t>(sequences_.size()) * static_cast<uint64_t>(context_tokens) * layout_.bytes_per_token();
}

}  // namespace inferscope
