// Decode attention of the 0.5B shape at one depth, as the engine runs it: 24 layers, one KV
// head (7 query heads, head size 64) per thread on 2 threads, F16 blocks of 16 tokens lying
// in order, with 512 MiB of other memory read between tokens as the weights are. Prints the
// median ms per token of the slower thread for each pass. Not a test: `bench_attention
// [DEPTH]` (default 2048 tokens).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/attention_kernels.h"
#include "engine/backend/cpu/kernels/stream_read.h"
#include "engine/core/fp16.h"

using namespace inferscope;

int main(int argc, char** argv) {

    const int n_ctx = argc > 1 ? std::atoi(argv[1]) : 2048;
    if (n_ctx <= 0) {
        std::fprintf(stderr, "usage: bench_attention [DEPTH]  (tokens in the cache, default 2048)\n");
        return 1;
    }
    constexpr int kLayers = 24, kHeadsKv = 2, kGroup = 7, kHeadDim = 64, kBlockTokens = 16, kTokens = 12;
    const int n_blocks = (n_ctx + kBlockTokens - 1) / kBlockTokens;
    const size_t part = static_cast<size_t>(n_blocks) * kBlockTokens * kHeadDim;  // one head's blocks of one layer
    std::mt19937 rng(5);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint16_t> keys(part * kLayers * kHeadsKv), values(keys.size());
    for (uint16_t& k : keys) k = fp32_to_fp16(normal(rng));
    for (uint16_t& v : values) v = fp32_to_fp16(normal(rng));
    std::vector<uint64_t> other((size_t{512} << 20) / sizeof(uint64_t), 1);
    const StreamReadFn read_other = stream_read_kernel(active_cpu_isa());
    const AttentionKernels kernels = attention_kernels(active_cpu_isa());
    struct Times {
        double scores = 0, softmax = 0, weighted_sum = 0;
    };
    std::vector<Times> slowest;
    for (int token = 0; token <= kTokens; ++token) {  // token 0 warms up
        volatile uint64_t sink = read_other(other.data(), other.size());
        (void)sink;
        Times per_head[kHeadsKv];
        std::vector<std::thread> threads;
        for (int head = 0; head < kHeadsKv; ++head) {
            threads.emplace_back([&, head] {
                using Clock = std::chrono::steady_clock;
                const auto ms = [](Clock::time_point a, Clock::time_point b) {
                    return std::chrono::duration<double, std::milli>(b - a).count();
                };
                std::vector<float> q(kGroup * kHeadDim, 0.1f), out(kGroup * kHeadDim), scores(static_cast<size_t>(kGroup) * n_ctx);
                std::vector<const uint16_t*> k_blocks(static_cast<size_t>(n_blocks)), v_blocks(k_blocks.size());
                for (int layer = 0; layer < kLayers; ++layer) {
                    const size_t first = part * static_cast<size_t>(layer * kHeadsKv + head);
                    for (int b = 0; b < n_blocks; ++b) {
                        k_blocks[static_cast<size_t>(b)] = keys.data() + first + static_cast<size_t>(b) * kBlockTokens * kHeadDim;
                        v_blocks[static_cast<size_t>(b)] = values.data() + first + static_cast<size_t>(b) * kBlockTokens * kHeadDim;
                    }
                    const auto t0 = Clock::now();
                    kernels.scores_f16(q.data(), kGroup, kHeadDim, k_blocks.data(), kBlockTokens, n_ctx, 0.125f, scores.data(), n_ctx);
                    const auto t1 = Clock::now();
                    for (int g = 0; g < kGroup; ++g) kernels.softmax(scores.data() + static_cast<size_t>(g) * n_ctx, n_ctx);
                    const auto t2 = Clock::now();
                    std::fill(out.begin(), out.end(), 0.0f);
                    kernels.accumulate_f16(scores.data(), kGroup, n_ctx, v_blocks.data(), kBlockTokens, kHeadDim, n_ctx, kHeadDim,
                                           out.data());
                    const auto t3 = Clock::now();
                    per_head[head].scores += ms(t0, t1);
                    per_head[head].softmax += ms(t1, t2);
                    per_head[head].weighted_sum += ms(t2, t3);
                }
            });
        }
        for (std::thread& t : threads) t.join();
        const auto total = [](const Times& t) { return t.scores + t.softmax + t.weighted_sum; };
        if (token > 0) slowest.push_back(total(per_head[0]) >= total(per_head[1]) ? per_head[0] : per_head[1]);
    }
    const auto median = [&](double Times::*field) {
        std::vector<double> v;
        for (const Times& t : slowest) v.push_back(t.*field);
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::vector<double> totals;
    for (const Times& t : slowest) totals.push_back(t.scores + t.softmax + t.weighted_sum);
    std::sort(totals.begin(), totals.end());
    std::printf("  %s attention, depth %d, median of %d tokens, ms per token (slower thread): scores %.3f, softmax %.3f, "
                "weighted sum %.3f, all %.3f\n",
                std::string(cpu_isa_name(active_cpu_isa())).c_str(), n_ctx, kTokens, median(&Times::scores),
                median(&Times::softmax), median(&Times::weighted_sum), totals[totals.size() / 2]);
    return 0;
}
