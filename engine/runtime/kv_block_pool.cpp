#include "engine/runtime/kv_block_pool.h"

#include <string>

#include "engine/core/error.h"

namespace inferscope {

const char* kv_dtype_name(KvDtype dtype) { return dtype == KvDtype::F16 ? "f16" : "f32"; }
int kv_dtype_bytes(KvDtype dtype) { return dtype == KvDtype::F16 ? 2 : 4; }

KvBlockPool::KvBlockPool(const KvLayout& layout) : layout_(layout) {
    if (layout.block_tokens <= 0 || layout.n_blocks < 0) {
        throw InvalidArgument("KV pool needs a positive block size and a non-negative block count");
    }
    free_blocks_.reserve(static_cast<size_t>(layout.n_blocks));
    // Pushed in reverse so that blocks are handed out in ascending order from a fresh pool.
    for (int32_t b = layout.n_blocks - 1; b >= 0; --b) free_blocks_.push_back(b);
}

void KvBlockPool::add_sequence(SeqId seq) {
    if (!sequences_.emplace(seq, Sequence{}).second) {
        throw InvalidArgument("sequence " + std::to_string(seq) + " already exists in the KV cache");
    }
}

KvBlockPool::Sequence& KvBlockPool::sequence(SeqId seq) {
    const auto it = sequences_.find(seq);
    if (it == sequences_.end()) throw InvalidArgument("sequence " + std::to_string(seq) + " is not in the KV cache");
    return it->second;
}

const KvBlockPool::Sequence& KvBlockPool::sequence(SeqId seq) const {
    return const_cast<KvBlockPool*>(this)->sequence(seq);
}

void KvBlockPool::free_sequence(SeqId seq) {
    truncate(seq, 0);
    sequences_.erase(seq);
}

void KvBlockPool::grow(SeqId seq, int n_tokens) {
    Sequence& s = sequence(seq);
    if (n_tokens <= s.n_tokens) return;
    const size_t blocks_needed = static_cast<size_t>((n_tokens + layout_.block_tokens - 1) / layout_.block_tokens);
    const size_t extra = blocks_needed > s.blocks.size() ? blocks_needed - s.blocks.size() : 0;
    if (extra > free_blocks_.size()) {
        throw CapacityError("KV cache is full: sequence " + std::to_string(seq) + " needs " + std::to_string(extra) +
                            " more blocks of " + std::to_string(layout_.block_tokens) + " tokens to reach " +
                            std::to_string(n_tokens) + " tokens, but only " + std::to_string(free_blocks_.size()) +
                            " of " + std::to_string(layout_.n_blocks) + " blocks are free");
    }
    for (size_t i = 0; i < extra; ++i) {
        s.blocks.push_back(free_blocks_.back());
        free_blocks_.pop_back();
    }
    s.n_tokens = n_tokens;
}

void KvBlockPool::truncate(SeqId seq, int n_tokens) {
    Sequence& s = sequence(seq);
    if (n_tokens < 0) throw InvalidArgument("cannot truncate a sequence to a negative length");
    if (n_tokens >= s.n_tokens) return;
    const size_t blocks_kept = static_cast<size_t>((n_tokens + layout_.block_tokens - 1) / layout_.block_tokens);
    while (s.blocks.size() > blocks_kept) {
        free_blocks_.push_back(s.blocks.back());
        s.blocks.pop_back();
    }
    s.n_tokens = n_tokens;
}

int KvBlockPool::sequence_length(SeqId seq) const { return sequence(seq).n_tokens; }

std::span<const int32_t> KvBlockPool::block_table(SeqId seq) const { return sequence(seq).blocks; }

std::vector<SeqId> KvBlockPool::sequence_ids() const {
    std::vector<SeqId> ids;
    for (const auto& [id, s] : sequences_) ids.push_back(id);
    return ids;
}

int64_t KvBlockPool::tokens_in_use() const {
    int64_t total = 0;
    for (const auto& [id, s] : sequences_) total += s.n_tokens;
    return total;
}

}  // namespace inferscope
