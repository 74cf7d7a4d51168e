#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/backend/cpu/cpu_features.h"
#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/bench/bench.h"
#include "engine/bench/memory_bandwidth.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"

namespace inferscope {
namespace {

TEST(Bench, WeightBytesPerTokenCountEveryMatrixOnce) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));  // untied: output.weight is separate
    const ModelConfig& c = model->config();
    // 2 layers x (q 64x64 + k 32x64 + v 32x64 + o 64x64 + gate/up/down 3 x 96x64) + output 300x64, F32
    const uint64_t per_layer = (64 * 64 + 32 * 64 + 32 * 64 + 64 * 64 + 3 * 96 * 64) * 4;
    EXPECT_EQ(weight_bytes_read_per_token(*model), c.n_layer * per_layer + 300 * 64 * 4);
}

TEST(Bench, RunsEveryTestAtEveryDepthInInterleavedRounds) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    BenchOptions options;
    options.prompt_lengths = {16};
    options.generate_lengths = {8};
    options.depths = {0, 32};
    options.repetitions = 2;
    options.measure_bandwidth = false;
    std::vector<std::string> runs;
    std::vector<double> fractions;
    options.progress = Progress([&](const ProgressUpdate& u) {
        runs.push_back(std::string(u.stage) + " " + std::string(u.item));
        fractions.push_back(u.fraction);
    });
    const BenchReport report = run_bench(session, options);
    // Rounds over all the tests: warm-ups first, then the first timed run of each, ...
    const std::vector<std::string> expected_runs = {
        "pp16 warm-up",   "tg8 warm-up",   "pp16 @ d32 warm-up",   "tg8 @ d32 warm-up",
        "pp16 run 1/2",   "tg8 run 1/2",   "pp16 @ d32 run 1/2",   "tg8 @ d32 run 1/2",
        "pp16 run 2/2",   "tg8 run 2/2",   "pp16 @ d32 run 2/2",   "tg8 @ d32 run 2/2"};
    EXPECT_EQ(runs, expected_runs);
    ASSERT_EQ(fractions.size(), 12u);
    EXPECT_DOUBLE_EQ(fractions[5], 6.0 / 12);
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
    EXPECT_FALSE(report.cancelled);
    ASSERT_EQ(report.results.size(), 4u);
    const char* names[] = {"pp16", "tg8", "pp16 @ d32", "tg8 @ d32"};
    for (size_t i = 0; i < 4; ++i) {
        EXPECT_EQ(report.results[i].test, names[i]);
        EXPECT_EQ(report.results[i].tokens_per_s.size(), 2u);
        EXPECT_GT(report.results[i].mean, 0.0);
    }
    // decode reads the weights plus the cache at its depth (and half the test)
    EXPECT_EQ(report.results[3].bytes_per_token,
              report.weight_bytes_per_token + session.kv_cache().layout().bytes_per_token() * (32 + 4));
    EXPECT_EQ(report.results[1].floor_tokens_per_s, 0.0);  // no bandwidth measured
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);   // every run freed its sequence
}

// With the bandwidth measured, each decode run is set against the bandwidth read just
// before it: one reading per timed run, the floor from the median reading, the % the mean
// of the runs' own ratios. Prompt tests get no readings.
TEST(Bench, CancellingStopsAfterTheRunInProgressWithNoResults) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    BenchOptions options;
    options.prompt_lengths = {16};
    options.generate_lengths = {8};
    options.repetitions = 3;
    options.measure_bandwidth = false;
    int runs = 0;
    options.progress = Progress([&](const ProgressUpdate&) { ++runs; }, [&] { return runs >= 3; });
    const BenchReport report = run_bench(session, options);
    EXPECT_TRUE(report.cancelled);
    EXPECT_EQ(runs, 3);
    EXPECT_TRUE(report.results.empty());
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);
}

TEST(Bench, EachDecodeRunHasItsOwnFloor) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    BenchOptions options;
    options.prompt_lengths = {8};
    options.generate_lengths = {4};
    options.repetitions = 3;
    options.bandwidth_buffer_bytes = uint64_t{16} << 20;
    const BenchReport report = run_bench(session, options);
    ASSERT_TRUE(report.bandwidth.has_value());
    ASSERT_EQ(report.results.size(), 2u);
    EXPECT_TRUE(report.results[0].bandwidth_per_run.empty());
    const BenchResult& tg = report.results[1];
    ASSERT_EQ(tg.bandwidth_per_run.size(), 3u);
    double percent_sum = 0;
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_GT(tg.bandwidth_per_run[i], 0.0);
        percent_sum += 100.0 * tg.tokens_per_s[i] * static_cast<double>(tg.bytes_per_token) / tg.bandwidth_per_run[i];
    }
    EXPECT_NEAR(tg.percent_of_floor, percent_sum / 3, 1e-9 * percent_sum);
    std::vector<double> sorted = tg.bandwidth_per_run;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_DOUBLE_EQ(tg.floor_tokens_per_s, sorted[1] / static_cast<double>(tg.bytes_per_token));
}

TEST(Bench, RefusesTestsLongerThanTheContext) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 32));
    BenchOptions options;
    options.prompt_lengths = {16};
    options.depths = {32};
    options.measure_bandwidth = false;
    EXPECT_THROW(run_bench(session, options), InvalidArgument);
}

// bench's backend column: the CPU backend names its threads, kernel family and, for AVX-512,
// where the 4-bit kernels prefetch, so that a table says what it was measured with.
TEST(Bench, CpuBackendNameSaysThreadsFamilyAndPrefetch) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    const std::string name = session.backend().name();
    const CpuIsa isa = active_cpu_isa();
    ASSERT_EQ(session.thread_count(), 2);
    std::string expected = "CPU (2 threads, " + std::string(cpu_isa_name(isa));
    if (isa == CpuIsa::Avx512) expected += ", 4-bit prefetch " + std::string(prefetch_level_name(active_prefetch_level()));
    if ((isa == CpuIsa::Dotprod || isa == CpuIsa::I8mm) && cpu_features().fp16_fml) expected += ", F16 over FMLAL";
    EXPECT_EQ(name, expected + ")");
}

TEST(MemoryBandwidth, MeasuresAPositiveRate) {
    ThreadPool pool(2);
    const ReadBandwidthProbe probe(pool, uint64_t{64} << 20);
    for (int reading = 0; reading < 2; ++reading) {  // the buffer is read again, not rebuilt
        const BandwidthResult r = probe.measure(pool, 2);
        EXPECT_EQ(r.buffer_bytes, uint64_t{64} << 20);
        EXPECT_GT(r.bytes_per_second, 0.0);
        EXPECT_EQ(r.threads, 2);
    }
}

}  // namespace
}  // namespace inferscope
