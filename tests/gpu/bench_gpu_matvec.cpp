// Decode matrix products on the Vulkan device: one product per matrix (record_matmul, and
// for gate/up the activation's own dispatch) against the fused matvec kernels
// (gpu/vk_matvec.h) on the shapes of Qwen2.5-0.5B and of a 7B model, for F16, Q8_0, Q4_0,
// Q4_K, Q6_K and IQ4_XS weights and 1, 2, 4 and 8 tokens. GPU timestamps around many
// back-to-back calls with a barrier between; prints microseconds per call and GB/s of weight
// bytes.
// Usage: bench_gpu_matvec [--quick] [--reps N] [--type T]...
//   --quick: one repetition and rows / 16, for lavapipe; --reps (after --quick): repetitions
//   per time, more of them steady lavapipe's figures; --type: only these weight types.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/formats/quant.h"
#include "gpu/op_harness.h"

namespace {

using inferscope::GgmlType;
using inferscope::WeightMatrix;
using Kernel = inferscope::gpu::OpHarness::ProductKernel;

// A rows x cols weight of `type`: 64 random rows repeated (the values do not change the time).
struct BenchWeight {
    std::vector<uint8_t> bytes;
    WeightMatrix w;
};

BenchWeight make_weight(GgmlType type, int64_t rows, int64_t cols, std::mt19937& rng) {
    BenchWeight b;
    b.w.name = "bench";
    b.w.type = type;
    b.w.rows = rows;
    b.w.cols = cols;
    b.w.row_bytes = inferscope::ggml_row_bytes(type, static_cast<uint64_t>(cols));
    const int64_t distinct = std::min<int64_t>(rows, 64);
    std::vector<uint8_t> pattern(b.w.row_bytes * static_cast<uint64_t>(distinct));
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < distinct; ++r) {
        for (float& v : row) v = d(rng);
        inferscope::quantize_row(type, row.data(), pattern.data() + static_cast<uint64_t>(r) * b.w.row_bytes, cols);
    }
    b.bytes.resize(b.w.row_bytes * static_cast<uint64_t>(rows));
    for (uint64_t at = 0; at < b.bytes.size(); at += pattern.size()) {
        std::memcpy(b.bytes.data() + at, pattern.data(), std::min<uint64_t>(pattern.size(), b.bytes.size() - at));
    }
    b.w.data = b.bytes.data();
    return b;
}

struct BenchCase {
    std::string name;
    int64_t cols;
    std::vector<int64_t> rows;  // one matrix per entry (q/k/v: 3, gate/up: 2)
    std::vector<Kernel> kernels;
};

const char* kernel_name(Kernel k) {
    switch (k) {
        case Kernel::Matmul:
            return "separate";
        case Kernel::Matvec:
            return "matvec";
        case Kernel::MatvecMulti:
            return "matvec_multi";
        case Kernel::MatvecGated:
            return "matvec_gated";
    }
    return "?";
}

std::vector<BenchCase> bench_cases() {
    const std::vector<Kernel> single = {Kernel::Matmul, Kernel::Matvec};
    const std::vector<Kernel> multi = {Kernel::Matmul, Kernel::Matvec, Kernel::MatvecMulti};
    const std::vector<Kernel> gated = {Kernel::Matmul, Kernel::MatvecGated};
    return {
        {"0.5B wo 896->896", 896, {896}, single},
        {"0.5B qkv 896->896+128+128", 896, {896, 128, 128}, multi},
        {"0.5B gate/up 896->4864", 896, {4864, 4864}, gated},
        {"0.5B down 4864->896", 4864, {896}, single},
        {"0.5B output 896->151936", 896, {151936}, single},
        {"7B wo 4096->4096", 4096, {4096}, single},
        {"7B gate/up 4096->14336", 4096, {14336, 14336}, gated},
        {"7B down 14336->4096", 14336, {4096}, single},
        {"7B output 4096->32000", 4096, {32000}, single},
    };
}

struct BenchOptions {
    int reps = 200;
    int64_t row_divisor = 1;
    std::vector<GgmlType> types = {GgmlType::F16,  GgmlType::Q8_0, GgmlType::Q4_0,
                                   GgmlType::Q4_K, GgmlType::Q6_K, GgmlType::IQ4_XS};
};

BenchOptions parse_options(int argc, char** argv) {
    BenchOptions o;
    std::vector<GgmlType> chosen;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--quick") {
            o.reps = 1;
            o.row_divisor = 16;
        } else if (arg == "--reps" && has_value) {
            o.reps = std::max(1, std::atoi(argv[++i]));
        } else if (arg == "--type" && has_value) {
            const auto type = inferscope::ggml_type_from_name(argv[++i]);
            if (!type) throw inferscope::Error(std::string("unknown weight type: ") + argv[i]);
            chosen.push_back(*type);
        } else {
            throw inferscope::Error("usage: bench_gpu_matvec [--quick] [--reps N] [--type T]...");
        }
    }
    if (!chosen.empty()) o.types = chosen;
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const BenchOptions options = parse_options(argc, argv);
        inferscope::gpu::OpHarness gpu(false);
        std::printf("device: %s; quantized types %s (INFERSCOPE_VK_INTEGER_DOT)\n", gpu.device_name().c_str(),
                    gpu.integer_dot() ? "on encoded inputs, integer dot products" : "on F32 inputs");
        if (!gpu.has_timestamps()) {
            std::printf("no GPU timestamps on this device: nothing to time\n");
            return 0;
        }
        const std::vector<int64_t> token_counts = {1, 2, 4, 8};
        std::mt19937 rng(1);
        for (GgmlType type : options.types) {
            for (const BenchCase& c : bench_cases()) {
                // The 256-element formats need whole blocks per row (0.5B's 896 columns are not).
                if (c.cols % static_cast<int64_t>(inferscope::ggml_type_traits(type).block_elements) != 0) continue;
                std::vector<BenchWeight> weights;
                std::vector<const WeightMatrix*> ws;
                uint64_t bytes = 0;
                for (int64_t rows : c.rows)
                    weights.push_back(make_weight(type, std::max<int64_t>(rows / options.row_divisor, 1), c.cols, rng));
                for (const BenchWeight& b : weights) {
                    ws.push_back(&b.w);
                    bytes += b.bytes.size();
                }
                const auto times = gpu.time_products(ws, c.kernels, token_counts, options.reps);
                for (size_t k = 0; k < c.kernels.size(); ++k) {
                    for (size_t i = 0; i < token_counts.size(); ++i) {
                        const double us = times[k][i];
                        std::printf("%-5s %-28s n=%lld %-13s %9.2f us %8.1f GB/s\n",
                                    std::string(inferscope::ggml_type_name(type)).c_str(), c.name.c_str(),
                                    static_cast<long long>(token_counts[i]), kernel_name(c.kernels[k]), us,
                                    static_cast<double>(bytes) / (us * 1e3));
                    }
                }
                std::fflush(stdout);
            }
        }
    } catch (const inferscope::Error& e) {
        std::fprintf(stderr, "bench_gpu_matvec: %s\n", e.what());
        return 1;
    }
    return 0;
}
