// Single-thread throughput of the tiled GEMM kernels (Google Benchmark), built by
// tests/CMakeLists.txt when Google Benchmark is installed. Run `bench_tile_gemm
// --benchmark_counter_table=true` (one thread; pin it with taskset for stable numbers). Reports GFLOP/s = 2 * rows * k * n / time for a Qwen2.5-0.5B-sized
// product: 4864 x 896 weights (ffn_up/gate) and 896 x 4864 (ffn_down) times 512 activation
// rows (a prefill ubatch); K-quants use 4864 x 1024 instead of 4864 x 896 (whole
// super-blocks).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/half_gemm.h"
#include "engine/backend/cpu/kernels/tile_gemm.h"
#include "engine/formats/ggml_type.h"
#include "engine/formats/quant.h"

namespace inferscope {
namespace {

std::vector<uint8_t> random_rows(GgmlType type, int64_t rows, int64_t k, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const uint64_t row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(k));
    std::vector<uint8_t> out(static_cast<size_t>(row_bytes * rows));
    std::vector<float> x(static_cast<size_t>(k));
    for (int64_t r = 0; r < rows; ++r) {
        for (float& v : x) v = normal(rng);
        quantize_row(type, x.data(), out.data() + r * row_bytes, k);
    }
    return out;
}

void bench(benchmark::State& state, GgmlType type, CpuIsa isa, int64_t rows, int64_t k, int64_t n) {
    if (!cpu_supports(isa)) {
        state.SkipWithError("ISA not supported");
        return;
    }
    const TileGemmFn kernel = tile_gemm_family_kernel(type, isa);
    if (kernel == nullptr) {
        state.SkipWithError("no kernel");
        return;
    }
    const GgmlType xtype = vec_dot_type(type);
    const std::vector<uint8_t> w = random_rows(type, rows, k, 1);
    const std::vector<uint8_t> x = random_rows(xtype, n, k, 2);
    std::vector<float> c(static_cast<size_t>(rows * n));
    TileGemmArgs args;
    args.k = k;
    args.weights = w.data();
    args.weight_row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(k));
    args.row_begin = 0;
    args.row_end = rows;
    args.activations = x.data();
    args.activation_row_bytes = ggml_row_bytes(xtype, static_cast<uint64_t>(k));
    args.n = n;
    args.c = c.data();
    args.ldc = rows;
    for (auto _ : state) {
        kernel(args);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * k * n) * 1e-9 *
                                                       static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
}

// F16 weights times a few activation rows (batched decode): the tiled kernel against the
// unpacked half kernel (half_gemm.h), which takes the activations as F32.
void bench_half(benchmark::State& state, GgmlType type, int64_t rows, int64_t k, int64_t n) {
    const HalfGemmFn kernel = simd::avx512_half_gemm_kernel(type);
    if (kernel == nullptr) {
        state.SkipWithError("no AVX-512 half kernel on this CPU");
        return;
    }
    const std::vector<uint8_t> w = random_rows(type, rows, k, 1);
    const std::vector<uint8_t> encoded = random_rows(type, n, k, 2);
    std::vector<float> x(static_cast<size_t>(n * k));
    for (int64_t i = 0; i < n; ++i) {
        dequantize_row(type, encoded.data() + i * ggml_row_bytes(type, static_cast<uint64_t>(k)), x.data() + i * k, k);
    }
    std::vector<float> xt(static_cast<size_t>(interleaved_floats(n, k)));
    interleave_rows(x.data(), n, k, xt.data(), 0, k);
    std::vector<float> c(static_cast<size_t>(rows * n));
    HalfGemmArgs args;
    args.k = k;
    args.weights = w.data();
    args.weight_row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(k));
    args.row_begin = 0;
    args.row_end = rows;
    args.x = x.data();
    args.xt = xt.data();
    args.n = n;
    args.c = c.data();
    args.ldc = rows;
    for (auto _ : state) {
        kernel(args);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(rows * k * n) * 1e-9 *
                                                       static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate);
}

const int kRegisteredSmallBatches = [] {
    for (const int64_t n : {2, 4, 8, 12, 16, 24, 32, 48, 64}) {
        for (const int64_t k : {896, 4864}) {
            const int64_t rows = k == 896 ? 4864 : 896;
            const std::string dims = std::to_string(rows) + "x" + std::to_string(k) + "/n" + std::to_string(n);
            benchmark::RegisterBenchmark(("avx512/F16/tile/" + dims).c_str(), bench, GgmlType::F16, CpuIsa::Avx512, rows, k, n)
                ->Unit(benchmark::kMillisecond)
                ->MinTime(0.3);
            benchmark::RegisterBenchmark(("avx512/F16/half/" + dims).c_str(), bench_half, GgmlType::F16, rows, k, n)
                ->Unit(benchmark::kMillisecond)
                ->MinTime(0.3);
        }
    }
    return 0;
}();

const int kRegistered = [] {
    const GgmlType types[] = {GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0, GgmlType::Q4_0,
                              GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q2_K,
                              GgmlType::Q3_K, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};
    struct Dims {
        int64_t rows, k;
    };
    for (const CpuIsa isa : {CpuIsa::Avx512, CpuIsa::AvxVnni, CpuIsa::Avx2}) {
        for (const GgmlType type : types) {
            for (Dims d : {Dims{4864, 896}, Dims{896, 4864}}) {
                // K-quant rows are whole 256-element super-blocks: 1024 stands in for 896.
                if (d.k % ggml_type_traits(type).block_elements != 0) d.k = 1024;
                const std::string name = std::string(cpu_isa_name(isa)) + "/" + std::string(ggml_type_name(type)) + "/" +
                                         std::to_string(d.rows) + "x" + std::to_string(d.k) + "/n512";
                benchmark::RegisterBenchmark(name.c_str(), bench, type, isa, d.rows, d.k, int64_t{512})
                    ->Unit(benchmark::kMillisecond)
                    ->MinTime(0.5)
                    ->UseRealTime();
            }
        }
    }
    return 0;
}();

}  // namespace
}  // namespace inferscope

BENCHMARK_MAIN();
