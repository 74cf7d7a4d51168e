#include "gpu/vk_attention.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace inferscope::gpu {
namespace {

constexpr uint32_t kMaxHeadDim = 256;

// Whether attention_split.comp runs its subgroup build: subgroup arithmetic with subgroups of 4
// threads or more (it keeps one partial maximum per subgroup); matmul_rows_per_group() is
// kMatmulThreads / the subgroup size.
bool subgroup_build(const Kernels& k, AttentionBuild build) {
    return build == AttentionBuild::Auto && k.matmul_shader() == Shader::Matmul &&
           k.matmul_rows_per_group() <= Kernels::kMatmulThreads / 4;
}

// attention_split.comp's shared memory for `rows` query rows: their queries (later the V sums),
// a chunk's probabilities per row, the chunk's V row offsets, each part's maximum and sum per
// row (a part is a subgroup of 4 or more threads, or 32 positions), finish_counter.glsl's flag,
// and without subgroups a chunk's scores per row.
uint64_t attention_shared_bytes(uint32_t rows, uint32_t head_dim, bool subgroups) {
    const uint64_t quads = (head_dim + 3) / 4;
    const uint64_t parts = subgroups ? kAttentionChunkPositions / 4 : kAttentionChunkPositions / 32;
    return 16 * rows * quads + 4 * rows * kAttentionChunkPositions + 4 * kAttentionChunkPositions + 8 * rows * parts + 4 +
           (subgroups ? 0 : 4 * rows * kAttentionChunkPositions);
}

// Query heads per workgroup: a KV head's, in equal parts of at most kAttentionMaxGroupHeads.
uint32_t workgroup_heads(uint32_t heads_per_kv) {
    const uint32_t parts = attention_head_parts(heads_per_kv);
    return parts == 0 ? 0 : (heads_per_kv + parts - 1) / parts;
}

void check_shape(const Kernels& k, const AttentionParams& params, uint32_t splits, uint32_t tile_tokens, bool subgroups) {
    const bool grouped = params.n_head_kv > 0 && params.n_head % params.n_head_kv == 0;
    const uint32_t group = grouped ? workgroup_heads(params.n_head / params.n_head_kv) : 0;
    const uint64_t rows = uint64_t{group} * tile_tokens;
    if (!grouped || params.head_dim == 0 || params.head_dim > kMaxHeadDim || params.head_dim < group ||
        params.block_tokens == 0 || splits == 0 || splits > kAttentionMaxSplits || tile_tokens == 0 ||
        (tile_tokens > 1 && rows > kAttentionMaxTileRows)) {
        throw Error("internal: split attention of " + std::to_string(params.n_head) + " heads over " +
                    std::to_string(params.n_head_kv) + " KV heads of " + std::to_string(params.head_dim) + " dims in " +
                    std::to_string(splits) + " splits, tiles of " + std::to_string(tile_tokens) + " tokens is out of range");
    }
    const uint64_t shared = attention_shared_bytes(static_cast<uint32_t>(rows), params.head_dim, subgroups);
    if (tile_tokens > 1 && shared > k.max_shared_bytes()) {
        throw Error("internal: split attention in tiles of " + std::to_string(tile_tokens) + " tokens needs " +
                    std::to_string(shared) + " bytes of shared memory, the device has " + std::to_string(k.max_shared_bytes()));
    }
}

}  // namespace

uint32_t attention_split_count(uint32_t max_context, uint32_t kv_workgroups, uint32_t n_tiles, uint32_t target_workgroups) {
    const uint64_t rows = std::max<uint64_t>(1, static_cast<uint64_t>(kv_workgroups) * n_tiles);
    const uint64_t for_occupancy = (std::max<uint64_t>(target_workgroups, 1) + rows - 1) / rows;
    const uint64_t by_length = std::max<uint32_t>(1, max_context / kAttentionMinSplitPositions);
    return static_cast<uint32_t>(std::clamp<uint64_t>(std::min(for_occupancy, by_length), 1, kAttentionMaxSplits));
}

uint32_t attention_head_parts(uint32_t heads_per_kv) {
    return (heads_per_kv + kAttentionMaxGroupHeads - 1) / kAttentionMaxGroupHeads;
}

uint32_t attention_tile_tokens(const Kernels& k, uint32_t group_heads, uint32_t head_dim) {
    const bool subgroups = subgroup_build(k, AttentionBuild::Auto);
    const uint32_t heads = std::max<uint32_t>(workgroup_heads(group_heads), 1);
    uint32_t tile = std::max<uint32_t>(1, kAttentionMaxTileRows / heads);
    while (tile > 1 && attention_shared_bytes(tile * heads, head_dim, subgroups) > k.max_shared_bytes()) --tile;
    return tile;
}

void check_attention_fits(const Kernels& k, uint32_t heads_per_kv, uint32_t head_dim) {
    const uint32_t heads = workgroup_heads(heads_per_kv);
    const uint64_t shared = attention_shared_bytes(heads, head_dim, subgroup_build(k, AttentionBuild::Auto));
    if (shared > k.max_shared_bytes()) {
        throw CapacityError("attention of " + std::to_string(heads) + " query heads of " + std::to_string(head_dim) +
                            " dimensions per workgroup needs " + std::to_string(shared) +
                            " bytes of shared memory; the Vulkan device gives a workgroup " +
                            std::to_string(k.max_shared_bytes()));
    }
}

uint32_t attention_pass_tile(std::span<const BatchToken> tokens, uint32_t most_tile) {
    const auto same_sequence = [](const BatchToken& a, const BatchToken& b) { return a.seq == b.seq; };
    return std::adjacent_find(tokens.begin(), tokens.end(), same_sequence) == tokens.end() ? 1 : most_tile;
}

uint64_t attention_partials_bytes(uint32_t n_tokens, uint32_t n_head, uint32_t head_dim, uint32_t splits) {
    const uint64_t floats = static_cast<uint64_t>(n_tokens) * n_head * splits * (head_dim + 2);
    return std::max<uint64_t>(floats * sizeof(float), 4);
}

uint64_t attention_split_counter_count(uint32_t n_tokens, uint32_t n_head) { return uint64_t{n_tokens} * n_head; }

void record_attention_split(Kernels& k, VkCommandBuffer cmd, const AttentionBuffers& b, uint32_t n, const AttentionParams& params,
                            uint32_t splits, bool barrier, AttentionBuild build, uint32_t tile_tokens) {
    const bool subgroups = subgroup_build(k, build);
    check_shape(k, params, splits, tile_tokens, subgroups);
    if (n == 0) return;
    struct {
        uint32_t n_head, n_head_kv, block_tokens;
        float scale;
        uint32_t window, n_tokens, splits;
    } push{params.n_head, params.n_head_kv, params.block_tokens, params.scale, params.window, n, splits};
    const uint32_t heads_per_kv = params.n_head / params.n_head_kv;
    const uint32_t heads = workgroup_heads(heads_per_kv);
    const SpecConstants spec{params.kv_f16 ? 1u : 0u, heads, params.head_dim, tile_tokens};
    const uint64_t head_parts = attention_head_parts(heads_per_kv);
    const uint64_t tiles = (n + tile_tokens - 1) / tile_tokens;
    const auto [x, y] = k.fold_groups(static_cast<uint64_t>(params.n_head_kv) * head_parts * tiles * splits);
    k.dispatch(cmd, subgroups ? Shader::AttentionSplit : Shader::AttentionSplitShared, spec,
               {b.q, b.k_cache, b.v_cache, b.tables, b.positions, b.table_start, b.partials, b.context, b.split_counters}, &push,
               sizeof push, x, y, barrier);
}

}  // namespace inferscope::gpu
