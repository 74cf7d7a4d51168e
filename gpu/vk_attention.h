#pragma once
// Flash-decoding attention: the context of each token split into parts that workgroups of
// their own walk (one per KV head, tile of tokens and split, up to 16 of the KV head's query
// heads at once); the last of a tile's splits to finish combines their partial softmax sums.
#include <vulkan/vulkan.h>

#include <cstdint>
#include <span>

#include "engine/backend/batch.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {

// Positions one split walks per step (attention_split.comp's CHUNK); a split's share of the
// context is a whole number of them.
inline constexpr uint32_t kAttentionChunkPositions = 128;
// The most splits record_attention_split accepts.
inline constexpr uint32_t kAttentionMaxSplits = 256;

// How many splits of the context a step's attention uses, fixed when the step is recorded (a
// recorded step is replayed at every later context, so it cannot depend on the current
// length): about `target_workgroups` workgroups (KernelTuning::attention_workgroups) at
// `max_context`, and at least kAttentionMinSplitPositions positions per split. A split has
// `kv_workgroups` workgroups (KV heads x attention_head_parts) per tile of tokens, `n_tiles` tiles.
uint32_t attention_split_count(uint32_t max_context, uint32_t kv_workgroups, uint32_t n_tiles, uint32_t target_workgroups);
inline constexpr uint32_t kAttentionMinSplitPositions = 256;
// Bytes of the scratch the split partials need for n tokens (at least 4: a buffer is never empty).
uint64_t attention_partials_bytes(uint32_t n_tokens, uint32_t n_head, uint32_t head_dim, uint32_t splits);
// How many counters (finish_counters) split attention needs for up to n_tokens tokens of n_head
// query heads: one per (tile, KV head, head part), at most one per token and query head.
uint64_t attention_split_counter_count(uint32_t n_tokens, uint32_t n_head);

// The most query heads one workgroup of attention_split.comp computes (a KV head with more has
// them split among several), and the most query rows (tokens of a tile x its query heads).
inline constexpr uint32_t kAttentionMaxGroupHeads = 16;
inline constexpr uint32_t kAttentionMaxTileRows = 16;

// The workgroups a KV head's heads_per_kv query heads are shared among, equal parts of at most
// kAttentionMaxGroupHeads: 1 for up to 16 heads.
uint32_t attention_head_parts(uint32_t heads_per_kv);

// Which build of attention_split.comp runs: the subgroup one where the device has subgroup
// arithmetic with subgroups of 4 threads or more (Auto), or the shared-memory one regardless
// (for tests on devices that have subgroups).
enum class AttentionBuild { Auto, SharedMemory };

// Tokens per tile for a pass of these tokens: most_tile (attention_tile_tokens) where two
// consecutive tokens share a sequence's cache (a prompt, a step verifying drafted tokens),
// else 1 (a decode step of a token per sequence), since a tile takes tokens of different
// sequences one after the other.
uint32_t attention_pass_tile(std::span<const BatchToken> tokens, uint32_t most_tile);

// Tokens per tile for a prompt's attention (record_attention_split's tile_tokens) with
// group_heads query heads per KV head: as many as keep the rows (tokens x a workgroup's query
// heads) within kAttentionMaxTileRows and the kernel's shared memory within the device's, at
// least 1.
uint32_t attention_tile_tokens(const Kernels& k, uint32_t group_heads, uint32_t head_dim);

// CapacityError naming the sizes unless a workgroup of attention_split.comp for one token of a
// KV head with heads_per_kv query heads of head_dim dimensions fits the device's shared memory
// (tiles of more tokens are sized to it: attention_tile_tokens).
void check_attention_fits(const Kernels& k, uint32_t heads_per_kv, uint32_t head_dim);

// What one attention dispatch reads and writes.
struct AttentionBuffers {
    VkBuffer q = VK_NULL_HANDLE;  // [n x n_head x head_dim]
    VkBuffer k_cache = VK_NULL_HANDLE, v_cache = VK_NULL_HANDLE;
    VkBuffer tables = VK_NULL_HANDLE;       // block tables, concatenated
    VkBuffer positions = VK_NULL_HANDLE;    // [n]
    VkBuffer table_start = VK_NULL_HANDLE;  // [n] where each token's block table starts in `tables`
    // With splits > 1: attention_partials_bytes of scratch and attention_split_counter_count
    // finish_counters (with one split they are not read, and any buffer may be bound).
    VkBuffer partials = VK_NULL_HANDLE, split_counters = VK_NULL_HANDLE;
    VkBuffer context = VK_NULL_HANDLE;  // [n x n_head x head_dim], written
};

// context[n x n_head x head_dim]: each token's attention over its sequence's cache, through the
// block table that starts at tables[table_start[i]], up to positions[i] (on a sliding-window
// layer from positions[i] - window + 1). One workgroup per (KV head, part of its query heads,
// tile of tile_tokens consecutive tokens, split) computes the part's query heads (every one of
// the KV head's where it has at most kAttentionMaxGroupHeads), for each token of the tile, over
// its share of the positions the tokens see (the share computed in the shader from
// positions[t], so one recording serves every later length); with splits > 1 each writes its
// partial (max, sum, weighted V) and the last of a tile's splits to finish combines them, in
// the same dispatch. Tokens of a tile from different sequences are taken one sequence after
// the other. Error when the shape is out of range (head_dim above 256 or below a workgroup's
// query heads, n_head not a multiple of n_head_kv, splits outside 1..kAttentionMaxSplits, more
// than kAttentionMaxTileRows rows or more shared memory than the device has). `barrier` false:
// no barrier after the dispatch.
void record_attention_split(Kernels& k, VkCommandBuffer cmd, const AttentionBuffers& buffers, uint32_t n,
                            const AttentionParams& params, uint32_t splits, bool barrier = true,
                            AttentionBuild build = AttentionBuild::Auto, uint32_t tile_tokens = 1);

}  // namespace inferscope::gpu
