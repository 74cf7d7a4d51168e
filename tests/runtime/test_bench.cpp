#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/eval/bench.h"
#include "engine/eval/memory_bandwidth.h"
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

TEST(Bench, RunsEveryTestAtEveryDepth) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 64));
    BenchOptions options;
    options.prompt_lengths = {16};
    options.generate_lengths = {8};
    options.depths = {0, 32};
    options.repetitions = 2;
    options.measure_bandwidth = false;
    const BenchReport report = run_bench(session, options);
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

TEST(Bench, RefusesTestsLongerThanTheContext) {
    const auto model = testing::tiny_model(testing::tiny_spec("qwen2"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 32));
    BenchOptions options;
    options.prompt_lengths = {16};
    options.depths = {32};
    options.measure_bandwidth = false;
    EXPECT_THROW(run_bench(session, options), InvalidArgument);
}

TEST(MemoryBandwidth, MeasuresAPositiveRate) {
    ThreadPool pool(2);
    const BandwidthResult r = measure_read_bandwidth(pool, uint64_t{64} << 20, 2);
    EXPECT_EQ(r.buffer_bytes, uint64_t{64} << 20);
    EXPECT_GT(r.bytes_per_second, 0.0);
    EXPECT_EQ(r.threads, 2);
}

}  // namespace
}  // namespace inferscope
