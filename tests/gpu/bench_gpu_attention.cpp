// GPU time per call of record_attention_split for a Qwen2.5-0.5B shape and a 7B shape over an
// F16 cache: decode (one query token) at several contexts with the split count
// attention_split_count chooses and forced ones against one split, and a prompt's tokens (and a
// step verifying 7 drafted tokens) at the end of a context in attention_tile_tokens' tiles
// against tiles of one token. Prints only; the
// effective GB/s count the K and V bytes each token's visible positions hold.
//   bench_gpu_attention [--quick]   (--quick: short contexts and few repetitions, for lavapipe)
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/fp16.h"
#include "gpu/vk_attention.h"
#include "gpu/vk_context.h"
#include "gpu/vk_kernels.h"
#include "gpu/vk_ops.h"

namespace inferscope::gpu {
namespace {

struct Model {
    const char* name;
    uint32_t n_head, n_head_kv, head_dim;
};

constexpr uint32_t kBlockTokens = 16;  // the backend's KV block size

struct Buffers {
    Buffer q, k_cache, v_cache, tables, positions, table_start, partials, split_counters, context;
    AttentionBuffers handles() const {
        return {q.handle(),           k_cache.handle(),  v_cache.handle(),        tables.handle(), positions.handle(),
                table_start.handle(), partials.handle(), split_counters.handle(), context.handle()};
    }
};

template <typename T>
Buffer device_copy(VkContext& ctx, const std::vector<T>& values) {
    Buffer b(ctx, std::max<size_t>(values.size(), 1) * sizeof(T), Buffer::Kind::Device);
    ctx.upload(b, 0, values.data(), values.size() * sizeof(T));
    return b;
}

// A cache of `context` positions in shuffled blocks, random F16 K/V and queries, the last n_tokens
// positions querying.
Buffers make_buffers(VkContext& ctx, const Model& m, uint32_t context, uint32_t n_tokens, uint32_t max_splits,
                     std::mt19937& rng) {
    const uint32_t blocks = (context + kBlockTokens - 1) / kBlockTokens;
    const size_t cache_values = static_cast<size_t>(blocks) * kBlockTokens * m.n_head_kv * m.head_dim;
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<uint16_t> cache(cache_values);
    for (uint16_t& x : cache) x = fp32_to_fp16(dist(rng));
    std::vector<float> q(static_cast<size_t>(n_tokens) * m.n_head * m.head_dim);
    for (float& x : q) x = dist(rng);
    std::vector<int32_t> table(blocks);
    std::iota(table.begin(), table.end(), 0);
    std::shuffle(table.begin(), table.end(), rng);
    Buffers b;
    b.q = device_copy(ctx, q);
    b.k_cache = device_copy(ctx, cache);
    b.v_cache = device_copy(ctx, cache);
    b.tables = device_copy(ctx, table);
    std::vector<int32_t> positions(n_tokens);
    std::iota(positions.begin(), positions.end(), static_cast<int32_t>(context - n_tokens));
    b.positions = device_copy(ctx, positions);
    b.table_start = device_copy(ctx, std::vector<int32_t>(n_tokens, 0));
    b.partials = Buffer(ctx, attention_partials_bytes(n_tokens, m.n_head, m.head_dim, max_splits), Buffer::Kind::Device);
    b.split_counters = finish_counters(ctx, attention_split_counter_count(n_tokens, m.n_head));
    b.context = Buffer(ctx, q.size() * sizeof(float), Buffer::Kind::Device);
    return b;
}

// Microseconds per call of `record` (each call followed by its barrier), the best of `rounds`
// command buffers of `calls` calls each after one to warm up, between two GPU timestamps.
double gpu_us_per_call(VkContext& ctx, const std::function<void(VkCommandBuffer)>& record, int calls, int rounds) {
    VkQueryPoolCreateInfo create{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    create.queryType = VK_QUERY_TYPE_TIMESTAMP;
    create.queryCount = 2;
    VkQueryPool pool = VK_NULL_HANDLE;
    vk_check(vkCreateQueryPool(ctx.device(), &create, nullptr, &pool), "vkCreateQueryPool");
    double best = 1e30;
    for (int r = -1; r < rounds; ++r) {  // round -1 warms up (pipeline creation, caches)
        ctx.run_now([&](VkCommandBuffer cmd) {
            vkCmdResetQueryPool(cmd, pool, 0, 2);
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, pool, 0);
            for (int i = 0; i < calls; ++i) record(cmd);
            vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 1);
        });
        uint64_t stamps[2] = {};
        vk_check(vkGetQueryPoolResults(ctx.device(), pool, 0, 2, sizeof stamps, stamps, sizeof(uint64_t),
                                       VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                 "vkGetQueryPoolResults");
        if (r >= 0)
            best = std::min(best, static_cast<double>(stamps[1] - stamps[0]) * ctx.timestamp_period_ns() / 1000.0 / calls);
    }
    vkDestroyQueryPool(ctx.device(), pool, nullptr);
    return best;
}

void bench_model(VkContext& ctx, Kernels& kernels, const Model& m, const std::vector<uint32_t>& contexts, int calls, int rounds,
                 std::mt19937& rng) {
    const AttentionParams params{m.n_head, m.n_head_kv, m.head_dim, kBlockTokens, 0.125f, 0, true};
    const uint32_t recorded_for_4096 = attention_split_count(4096, m.n_head_kv, 1, kernels.tuning().attention_workgroups);
    std::printf("\n%s: %u heads, %u KV heads, head_dim %u, F16 cache, blocks of %u; attention_split_count(4096) = %u\n", m.name,
                m.n_head, m.n_head_kv, m.head_dim, kBlockTokens, recorded_for_4096);
    std::printf("%8s  %-22s %10s %10s %9s\n", "context", "kernel", "us/call", "GB/s K+V", "speed-up");
    for (uint32_t context : contexts) {
        const uint32_t fitted = attention_split_count(context, m.n_head_kv, 1, kernels.tuning().attention_workgroups);
        std::vector<uint32_t> splits = {recorded_for_4096, fitted, 1, 4, 16, 32};
        std::sort(splits.begin(), splits.end());
        splits.erase(std::unique(splits.begin(), splits.end()), splits.end());
        Buffers b = make_buffers(ctx, m, context, 1, splits.back(), rng);
        const double kv_bytes = 2.0 * context * m.n_head_kv * m.head_dim * sizeof(uint16_t);
        double base_us = 0;  // one split's, the first
        for (uint32_t s : splits) {
            const double us = gpu_us_per_call(
                ctx, [&](VkCommandBuffer cmd) { record_attention_split(kernels, cmd, b.handles(), 1, params, s); }, calls,
                rounds);
            std::string label = "split x" + std::to_string(s);
            if (s == recorded_for_4096) label += " (count@4096)";
            if (s == fitted) label += " (count@ctx)";
            if (s == 1) base_us = us;
            std::printf("%8u  %-22s %10.2f %10.1f %9.2f\n", context, label.c_str(), us, kv_bytes / us / 1e3, base_us / us);
        }
        kernels.forget_descriptor_sets();  // the buffers are freed next
    }
}

// A prompt of `prompt` tokens of one sequence (or a step verifying that many drafted tokens)
// after `depth` positions, in tiles of one token and of attention_tile_tokens' count, each in
// the split count attention_split_count gives its tiles at that context.
void bench_prompt(VkContext& ctx, Kernels& kernels, const Model& m, uint32_t prompt, const std::vector<uint32_t>& depths,
                  int calls, int rounds, std::mt19937& rng) {
    const AttentionParams params{m.n_head, m.n_head_kv, m.head_dim, kBlockTokens, 0.125f, 0, true};
    const uint32_t tile = attention_tile_tokens(kernels, m.n_head / m.n_head_kv, m.head_dim);
    std::printf("\n%s: %u tokens of one sequence, tiles of up to %u tokens\n", m.name, prompt, tile);
    std::printf("%8s  %-22s %10s %10s %9s\n", "depth", "kernel", "us/call", "GB/s K+V", "speed-up");
    const uint32_t kv_workgroups = m.n_head_kv * attention_head_parts(m.n_head / m.n_head_kv);
    for (uint32_t depth : depths) {
        const auto splits_for = [&](uint32_t t) {
            return attention_split_count(depth + prompt, kv_workgroups, (prompt + t - 1) / t,
                                         kernels.tuning().attention_workgroups);
        };
        Buffers b = make_buffers(ctx, m, depth + prompt, prompt, std::max(splits_for(1), splits_for(tile)), rng);
        // Each token reads the K and V of the positions it sees once.
        const double kv_bytes = 2.0 * m.n_head_kv * m.head_dim * sizeof(uint16_t) *
                                (static_cast<double>(depth) * prompt + prompt * (prompt + 1) / 2.0);
        double base_us = 0;  // tiles of one token, the first
        for (uint32_t t : {1u, tile}) {
            const double us = gpu_us_per_call(
                ctx,
                [&](VkCommandBuffer cmd) {
                    record_attention_split(kernels, cmd, b.handles(), prompt, params, splits_for(t), true, AttentionBuild::Auto,
                                           t);
                },
                calls, rounds);
            if (t == 1) base_us = us;
            const std::string label = "tiles of " + std::to_string(t) + ", split x" + std::to_string(splits_for(t));
            std::printf("%8u  %-22s %10.2f %10.1f %9.2f\n", depth, label.c_str(), us, kv_bytes / us / 1e3, base_us / us);
        }
        kernels.forget_descriptor_sets();
    }
}

int run(bool quick) {
    VkContext ctx;
    Kernels kernels(ctx);
    if (!ctx.info().timestamps) {
        std::fprintf(stderr, "%s has no compute-queue timestamps\n", ctx.info().name.c_str());
        return 1;
    }
    std::printf("device: %s (subgroup size %u)\n", ctx.info().name.c_str(), ctx.info().subgroup_size);
    const std::vector<uint32_t> contexts = quick ? std::vector<uint32_t>{64, 512} : std::vector<uint32_t>{64, 512, 2048, 4096};
    const int calls = quick ? 3 : 200;
    const int rounds = quick ? 1 : 5;
    std::mt19937 rng(1);
    for (const Model& m : {Model{"Qwen2.5-0.5B", 14, 2, 64}, Model{"7B", 32, 8, 128}}) {
        bench_model(ctx, kernels, m, contexts, calls, rounds, rng);
        bench_prompt(ctx, kernels, m, quick ? 64 : 512, quick ? std::vector<uint32_t>{0, 256} : std::vector<uint32_t>{0, 2048},
                     quick ? 1 : 20, rounds, rng);
        // A speculative step verifying 7 drafted tokens after the last accepted one.
        bench_prompt(ctx, kernels, m, 8, quick ? std::vector<uint32_t>{512} : std::vector<uint32_t>{2048, 4096}, calls, rounds,
                     rng);
    }
    return 0;
}

}  // namespace
}  // namespace inferscope::gpu

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    try {
        return inferscope::gpu::run(quick);
    } catch (const inferscope::Error& e) {
        std::fprintf(stderr, "bench_gpu_attention: %s\n", e.what());
        return 1;
    }
}
