// batch-bench: rows per batch size with the aggregate decode speed's mean and spread over the
// repetitions, and its argument checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/bench/batch_bench.h"
#include "engine/core/error.h"
#include "support/engine_helpers.h"
#include "support/tiny_models.h"
#include "support/warmed_up_backend.h"

namespace inferscope {
namespace {

TEST(BatchBench, RepeatedRunsGiveAMeanAndASpreadPerBatchSize) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    SessionOptions session_options = testing::test_session_options(KvDtype::F16, 32);
    session_options.max_sequences = 4;
    InferenceSession session(model, session_options);
    BatchBenchOptions options;
    options.batch_sizes = {4, 1, 2};
    options.prompt_tokens = 8;
    options.generate_tokens = 4;
    options.repetitions = 3;
    std::vector<std::string> progress;
    options.progress = Progress([&](const ProgressUpdate& u) { progress.emplace_back(u.item); });
    const BatchBenchReport report = run_batch_bench(session, options);
    ASSERT_EQ(report.rows.size(), 3u);
    EXPECT_EQ(progress, (std::vector<std::string>{"B=1", "B=2", "B=4"}));
    for (size_t i = 0; i < report.rows.size(); ++i) {
        const BatchBenchRow& row = report.rows[i];
        EXPECT_EQ(row.batch, 1 << i);
        EXPECT_EQ(row.kv_tokens, static_cast<int64_t>(row.batch) * 12);
        EXPECT_GT(row.decode_tokens_per_s, 0);
        EXPECT_EQ(row.runs, 3);
        EXPECT_TRUE(std::isfinite(row.decode_tokens_per_s_stddev));
        EXPECT_GT(row.ms_per_step, 0);
    }
    EXPECT_DOUBLE_EQ(report.rows.front().speedup, 1.0);

    options.repetitions = 1;
    options.progress = {};
    for (const BatchBenchRow& row : run_batch_bench(session, options).rows) {
        EXPECT_EQ(row.runs, 1);
        EXPECT_EQ(row.decode_tokens_per_s_stddev, 0.0);  // no spread from a single run
    }
}

// Where the backend has a warm-up (a device compiling its kernels at a shape's first run), each
// batch size runs once untimed before its timed runs; on the CPU only the first-touch run is extra.
TEST(BatchBench, EachBatchSizeRunsOnceUntimedWhereTheBackendWarmsUp) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    for (const bool warms_up : {false, true}) {
        std::vector<Batch> batches;
        SessionOptions session_options = testing::test_session_options(KvDtype::F16, 32);
        session_options.max_sequences = 4;
        InferenceSession session(model, session_options, testing::recording_cpu_backend(model, warms_up, batches));
        BatchBenchOptions options;
        options.batch_sizes = {1, 4};
        options.prompt_tokens = 8;
        options.generate_tokens = 2;
        options.repetitions = 3;
        run_batch_bench(session, options);
        const auto prefills_of = [&batches](int batch) {
            return std::count_if(batches.begin(), batches.end(), [&](const Batch& b) { return b.size() == 8u * batch; });
        };
        EXPECT_EQ(prefills_of(1), warms_up ? 5 : 4) << "first-touch, untimed, 3 timed";
        EXPECT_EQ(prefills_of(4), warms_up ? 4 : 3);
    }
}

TEST(BatchBench, CancellingKeepsTheRowsMeasured) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    SessionOptions session_options = testing::test_session_options(KvDtype::F16, 16);
    session_options.max_sequences = 4;
    InferenceSession session(model, session_options);
    BatchBenchOptions options;
    options.batch_sizes = {1, 2, 4};
    options.prompt_tokens = 8;
    options.generate_tokens = 4;
    int rows_reported = 0;
    options.progress = Progress([&](const ProgressUpdate&) { ++rows_reported; }, [&] { return rows_reported >= 2; });
    const BatchBenchReport report = run_batch_bench(session, options);
    EXPECT_TRUE(report.cancelled);
    ASSERT_EQ(report.rows.size(), 2u);
    EXPECT_EQ(report.rows[1].batch, 2);
    EXPECT_EQ(report.knee_batch, 0);
    EXPECT_EQ(session.kv_cache().used_block_count(), 0);
}

TEST(BatchBench, BadOptionsAreClearErrors) {
    const auto model = testing::tiny_model(testing::tiny_spec("llama"));
    InferenceSession session(model, testing::test_session_options(KvDtype::F16, 32));
    BatchBenchOptions options;
    options.batch_sizes = {1};
    options.prompt_tokens = 8;
    options.generate_tokens = 4;
    options.repetitions = 0;
    EXPECT_THROW(run_batch_bench(session, options), InvalidArgument);
    options.repetitions = 1;
    options.batch_sizes = {0};
    EXPECT_THROW(run_batch_bench(session, options), InvalidArgument);
    options.batch_sizes = {1};
    options.prompt_tokens = 40;  // beyond the context of 32
    EXPECT_THROW(run_batch_bench(session, options), InvalidArgument);
}

}  // namespace
}  // namespace inferscope
