// Single-thread throughput of the row dot products (engine/backend/cpu/kernels/row_dot.h) of
// every instruction-set family this CPU runs, in GB/s of weight bytes: over matrices far
// larger than any cache, and over rows that stay in L2 (the compute ceiling), beside a plain
// streaming read. Not a test: run `bench_row_dot`.
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/backend/cpu/kernels/row_dot.h"
#include "formats/quant_test_util.h"
#include "backend/row_dot_test_support.h"

using namespace inferscope;
using testing::block_elements;
using testing::Dist;
using testing::encode_reference;
using testing::make_row;
using testing::name_of;
using testing::row_bytes;

namespace {

constexpr const auto& kWeightTypes = testing::kRowDotWeightTypes;

// Seconds of CPU time of this thread (the machine may be shared: time while descheduled
// does not count).
double thread_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// A plain streaming read of the same buffers, for the attainable single-core bandwidth.
__attribute__((target("avx2"))) uint64_t read_all(const uint8_t* p, size_t bytes) {
    uint64_t acc[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 32 <= bytes; i += 32) {
        uint64_t v[4];
        std::memcpy(v, p + i, 32);
        for (int k = 0; k < 4; ++k) acc[k] ^= v[k];
    }
    return acc[0] ^ acc[1] ^ acc[2] ^ acc[3];
}

}  // namespace

int main() {
    const size_t target_bytes = size_t{320} << 20;  // far larger than any last-level cache
    std::printf("  GB/s of weight bytes, one thread (thread CPU time), best of 3 passes (scalar: 1) over >= %zu MiB of weights\n",
                target_bytes >> 20);
    std::printf("  %-6s %-10s %10s %9s %9s %9s | in L2: %5s %9s\n", "type", "rows x k", "MiB", "scalar", "avx2", "avx512",
                "avx2", "avx512");
    std::vector<uint8_t> buffer;
    double read_gbs = 0.0;
    struct Shape {
        GgmlType type;
        int64_t rows, k;
    };
    std::vector<Shape> shapes;
    // 4864 x 896 (rows x columns) and 896 x 4864; the K-quants only the latter (a row of 896
    // is not a whole number of 256-element blocks). The same number of weight bytes.
    for (GgmlType t : kWeightTypes) {
        if (block_elements(t) != 256) shapes.push_back({t, 4864, 896});
    }
    for (GgmlType t : kWeightTypes) shapes.push_back({t, 896, 4864});
    for (const Shape& shape : shapes) {
        const GgmlType t = shape.type;
        const int64_t rows = shape.rows, k = shape.k;
        const size_t rb = row_bytes(t, k);
        const size_t matrix_bytes = rb * static_cast<size_t>(rows);
        const size_t copies = (target_bytes + matrix_bytes - 1) / matrix_bytes;
        buffer.resize(matrix_bytes * copies);
        for (int64_t r = 0; r < rows; ++r) {
            quantize_row(t, make_row(Dist::Gaussian, k, 7 + static_cast<uint32_t>(r)).data(), buffer.data() + r * rb, k);
        }
        for (size_t c = 1; c < copies; ++c) std::memcpy(buffer.data() + c * matrix_bytes, buffer.data(), matrix_bytes);
        const std::vector<uint8_t> x = encode_reference(vec_dot_type(t), make_row(Dist::Gaussian, k, 3));
        if (read_gbs == 0.0) {
            double best = 1e30;
            for (int pass = 0; pass < 3; ++pass) {
                const double t0 = thread_seconds();
                volatile uint64_t sink = read_all(buffer.data(), buffer.size());
                (void)sink;
                best = std::min(best, thread_seconds() - t0);
            }
            read_gbs = static_cast<double>(buffer.size()) / best * 1e-9;
        }
        std::printf("  %-6s %4lldx%-5lld %10.1f", name_of(t).c_str(), static_cast<long long>(rows),
                    static_cast<long long>(k), static_cast<double>(buffer.size()) / (1 << 20));
        for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
            if (!cpu_supports(isa)) {
                std::printf(" %9s", "-");
                continue;
            }
            const RowDotFn dot = row_dot_kernels(t, isa).dot;
            const int passes = isa == CpuIsa::Scalar ? 1 : 3;  // the scalar reference is slow
            double best = 1e30;
            float sink = 0.0f;
            for (int pass = 0; pass < passes; ++pass) {
                const double t0 = thread_seconds();
                for (size_t c = 0; c < copies; ++c) {
                    const uint8_t* m = buffer.data() + c * matrix_bytes;
                    for (int64_t r = 0; r < rows; ++r) sink += dot(k, m + r * rb, x.data());
                }
                best = std::min(best, thread_seconds() - t0);
            }
            volatile float keep = sink;
            (void)keep;
            std::printf(" %9.2f", static_cast<double>(matrix_bytes * copies) / best * 1e-9);
        }
        // The same kernels on rows that stay in L2 (~384 KiB): the compute ceiling.
        const int64_t hot_rows = std::max<int64_t>(1, static_cast<int64_t>((size_t{384} << 10) / rb));
        for (CpuIsa isa : {CpuIsa::Avx2, CpuIsa::Avx512}) {
            if (!cpu_supports(isa)) {
                std::printf(" %9s", "-");
                continue;
            }
            const RowDotFn dot = row_dot_kernels(t, isa).dot;
            double best = 1e30;
            float sink = 0.0f;
            const int reps = static_cast<int>(std::max<size_t>(1, (size_t{64} << 20) / (rb * hot_rows)));
            for (int pass = 0; pass < 5; ++pass) {
                const double t0 = thread_seconds();
                for (int rep = 0; rep < reps; ++rep) {
                    for (int64_t r = 0; r < hot_rows; ++r) sink += dot(k, buffer.data() + r * rb, x.data());
                }
                best = std::min(best, thread_seconds() - t0);
            }
            volatile float keep = sink;
            (void)keep;
            std::printf(" %9.2f", static_cast<double>(rb * hot_rows) * reps / best * 1e-9);
        }
        std::printf("\n");
    }
    std::printf("  plain streaming read of the same buffer: %.2f GB/s\n", read_gbs);
    return 0;
}
