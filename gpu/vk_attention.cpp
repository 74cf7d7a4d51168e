#include "gpu/vk_attention.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"

namespace inferscope::gpu {
namespace {

constexpr uint32_t kMaxGroupHeads = 16;
constexpr uint32_t kMaxHeadDim = 256;

// Launches `count` workgroups as X x Y, X within the device's limit (the shaders linearise
// the ids and skip those past the end).
std::pair<uint32_t, uint32_t> fold_groups(const Kernels& k, uint64_t count) {
    const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(count, k.max_groups_x()));
    return {x, static_cast<uint32_t>((count + x - 1) / x)};
}

void check_shape(const AttentionParams& params, uint32_t splits) {
    const bool grouped = params.n_head_kv > 0 && params.n_head % params.n_head_kv == 0;
    const uint32_t group = grouped ? params.n_head / params.n_head_kv : 0;
    if (!grouped || group > kMaxGroupHeads || params.head_dim == 0 || params.head_dim > kMaxHeadDim || params.head_dim < group ||
        params.block_tokens == 0 || splits == 0 || splits > kAttentionMaxSplits) {
        throw Error("internal: split attention of " + std::to_string(params.n_head) + " heads over " +
                    std::to_string(params.n_head_kv) + " KV heads of " + std::to_string(params.head_dim) + " dims in " +
                    std::to_string(splits) + " splits is out of range");
    }
}

}  // namespace

uint32_t attention_split_count(uint32_t max_context, uint32_t n_head_kv, uint32_t n_tokens, uint32_t target_workgroups) {
    const uint64_t rows = std::max<uint64_t>(1, static_cast<uint64_t>(n_head_kv) * n_tokens);
    const uint64_t for_occupancy = (std::max<uint64_t>(target_workgroups, 1) + rows - 1) / rows;
    const uint64_t by_length = std::max<uint32_t>(1, max_context / kAttentionMinSplitPositions);
    return static_cast<uint32_t>(std::clamp<uint64_t>(std::min(for_occupancy, by_length), 1, kAttentionMaxSplits));
}

uint64_t attention_partials_bytes(uint32_t n_tokens, uint32_t n_head, uint32_t head_dim, uint32_t splits) {
    const uint64_t floats = static_cast<uint64_t>(n_tokens) * n_head * splits * (head_dim + 2);
    return std::max<uint64_t>(floats * sizeof(float), 4);
}

void record_attention_split(Kernels& k, VkCommandBuffer cmd, VkBuffer q, VkBuffer k_cache, VkBuffer v_cache, VkBuffer tables,
                            VkBuffer positions, VkBuffer table_start, VkBuffer partials, VkBuffer context, uint32_t n,
                            const AttentionParams& params, uint32_t splits, bool barrier, AttentionBuild build) {
    check_shape(params, splits);
    if (n == 0) return;
    struct {
        uint32_t n_head, n_head_kv, block_tokens;
        float scale;
        uint32_t window, n_tokens, splits;
    } push{params.n_head, params.n_head_kv, params.block_tokens, params.scale, params.window, n, splits};
    // The subgroup build keeps one partial maximum per subgroup, room for subgroups of 4 threads
    // or more; matmul_rows_per_group() is kMatmulThreads / the subgroup size.
    const bool subgroups = build == AttentionBuild::Auto && k.matmul_shader() == Shader::Matmul &&
                           k.matmul_rows_per_group() <= Kernels::kMatmulThreads / 4;
    const SpecConstants spec{params.kv_f16 ? 1u : 0u, params.n_head / params.n_head_kv, params.head_dim, 0};
    const auto [x, y] = fold_groups(k, static_cast<uint64_t>(params.n_head_kv) * n * splits);
    k.dispatch(cmd, subgroups ? Shader::AttentionSplit : Shader::AttentionSplitShared, spec,
               {q, k_cache, v_cache, tables, positions, table_start, partials, context}, &push, sizeof push, x, y,
               barrier || splits > 1);
    if (splits == 1) return;
    const uint32_t reduce_push[4] = {params.n_head, params.head_dim, n, splits};
    const auto [rx, ry] = fold_groups(k, static_cast<uint64_t>(params.n_head) * n);
    k.dispatch(cmd, Shader::AttentionReduce, {}, {partials, context}, reduce_push, sizeof reduce_push, rx, ry, barrier);
}

}  // namespace inferscope::gpu
