#include "engine/kv/kv_cache.h"

#include <string>

#include "engine/core/error.h"

namespace inferscope {

const char* kv_group_name(KvGroup group) { return group == KvGroup::Local ? "local" : "global"; }

KvCacheLayout split_kv_layout(const KvLayout& global, const std::vector<bool>& is_local, int window_tokens, int local_blocks) {
    if (static_cast<int>(is_local.size()) != global.n_layer) {
        throw InvalidArgument("KV layout: " + std::to_string(is_local.size()) + " layer kinds for " +
                              std::to_string(global.n_layer) + " layers");
    }
    KvCacheLayout layout;
    layout.global = global;
    layout.global.n_layer = 0;
    layout.local = global;
    layout.local.n_layer = 0;
    layout.local.window_tokens = window_tokens;
    layout.local.n_blocks = local_blocks;
    for (const bool local : is_local) {
        KvLayout& group = local ? layout.local : layout.global;
        layout.layer_group.push_back(local ? KvGroup::Local : KvGroup::Global);
        layout.index_in_group.push_back(group.n_layer++);
    }
    if (!layout.has_local()) layout.local.n_blocks = 0;
    return layout;
}

KvCache::KvCache(const KvCacheLayout& layout) : layout_(layout), global_(layout.global) {
    if (layout.has_local()) local_.emplace(layout.local);
}

void KvCache::add_sequence(SeqId seq) {
    global_.add_sequence(seq);
    if (local_) local_->add_sequence(seq);
}

void KvCache::fork_sequence(SeqId parent, SeqId child) {
    global_.fork_sequence(parent, child);
    if (local_) local_->fork_sequence(parent, child);
}

void KvCache::free_sequence(SeqId seq) {
    global_.free_sequence(seq);
    if (local_) local_->free_sequence(seq);
}

int KvCache::attach_cached_prefix(SeqId seq, std::span<const TokenId> tokens) {
    const int global_tokens = global_.attach_cached_prefix(seq, tokens);
    if (!local_) return global_tokens;
    // One more token than the global prefix: the pool never attaches a prompt's last token.
    const int both = local_->attach_cached_prefix(seq, tokens.first(static_cast<size_t>(global_tokens) + 1));
    global_.truncate(seq, both);
    return both;
}

KvBlockCopies KvCache::append(SeqId seq, std::span<const TokenId> tokens) {
    // Checked before the global pool changes: its append may already evict cached blocks
    // and copy a shared one.
    if (local_) local_->check_append(seq, static_cast<int>(tokens.size()));
    KvBlockCopies copies;
    copies.global = global_.append(seq, tokens);
    if (local_) copies.local = local_->append(seq, tokens);
    return copies;
}

void KvCache::check_batch(const std::map<SeqId, int>& tokens_per_sequence) const {
    int needed = 0;
    for (const auto& [seq, count] : tokens_per_sequence) needed += global_.blocks_to_append(seq, count);
    if (needed <= global_.free_block_count()) return;
    throw CapacityError("KV cache is full: the batch needs " + std::to_string(needed) + " more blocks of " +
                        std::to_string(global_.layout().block_tokens) + " tokens, but only " +
                        std::to_string(global_.free_block_count()) + " of " + std::to_string(global_.layout().n_blocks) +
                        " blocks are free");
}

void KvCache::commit(SeqId seq) {
    global_.commit(seq);
    if (local_) local_->commit(seq);
}

void KvCache::truncate(SeqId seq, int n_tokens) {
    if (local_) local_->truncate(seq, n_tokens);  // the one that can refuse, so it goes first
    global_.truncate(seq, n_tokens);
}

int KvCache::used_block_count() const { return global_.used_block_count() + (local_ ? local_->used_block_count() : 0); }
uint64_t KvCache::bytes_in_use() const { return global_.bytes_in_use() + (local_ ? local_->bytes_in_use() : 0); }
uint64_t KvCache::bytes_reserved() const { return global_.bytes_reserved() + (local_ ? local_->bytes_reserved() : 0); }
uint64_t KvCache::bytes_shared() const { return global_.bytes_shared() + (local_ ? local_->bytes_shared() : 0); }

uint64_t KvCache::bytes_if_reserved_per_sequence(int context_tokens) const {
    return global_.bytes_if_reserved_per_sequence(context_tokens) +
           (local_ ? local_->bytes_if_reserved_per_sequence(context_tokens) : 0);
}

}  // namespace inferscope
