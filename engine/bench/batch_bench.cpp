#include "engine/bench/batch_bench.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <string>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

BatchBenchRow run_one(InferenceSession& session, int batch, const BatchBenchOptions& o, std::mt19937& rng) {
    std::uniform_int_distribution<TokenId> token(0, session.model().config().n_vocab - 1);
    std::vector<SeqId> seqs;
    for (int s = 0; s < batch; ++s) seqs.push_back(session.new_sequence());
    BatchBenchRow row;
    row.batch = batch;
    row.prompt_tokens = o.prompt_tokens;
    row.generate_tokens = o.generate_tokens;
    row.kv_tokens = static_cast<int64_t>(batch) * (o.prompt_tokens + o.generate_tokens);
    try {
        Batch b;
        for (SeqId s : seqs) {
            for (int i = 0; i < o.prompt_tokens; ++i) b.push_back({token(rng), s, i, i + 1 == o.prompt_tokens});
        }
        auto start = Clock::now();
        session.decode(b, StepPhase::Prefill);
        row.prefill_s = seconds_since(start);
        start = Clock::now();
        for (int step = 0; step < o.generate_tokens; ++step) {
            b.clear();
            for (SeqId s : seqs) b.push_back({token(rng), s, session.sequence_length(s), true});
            session.decode(b, StepPhase::Decode);
        }
        row.decode_s = seconds_since(start);
    } catch (...) {
        for (SeqId s : seqs) session.free_sequence(s);
        throw;
    }
    for (SeqId s : seqs) session.free_sequence(s);
    row.prefill_tokens_per_s = static_cast<double>(batch) * o.prompt_tokens / row.prefill_s;
    row.decode_tokens_per_s = static_cast<double>(batch) * o.generate_tokens / row.decode_s;
    row.ms_per_step = 1000.0 * row.decode_s / o.generate_tokens;
    return row;
}

// run_one `o.repetitions` times: times and speeds are the runs' means, with the spread of S_TG.
BatchBenchRow run_repeated(InferenceSession& session, int batch, const BatchBenchOptions& o, std::mt19937& rng) {
    std::vector<BatchBenchRow> runs;
    std::vector<double> decode_speeds;
    for (int r = 0; r < o.repetitions; ++r) {
        runs.push_back(run_one(session, batch, o, rng));
        decode_speeds.push_back(runs.back().decode_tokens_per_s);
    }
    BatchBenchRow row = runs.front();
    const auto mean_of = [&runs](double BatchBenchRow::*field) {
        double sum = 0;
        for (const BatchBenchRow& run : runs) sum += run.*field;
        return sum / static_cast<double>(runs.size());
    };
    row.prefill_s = mean_of(&BatchBenchRow::prefill_s);
    row.prefill_tokens_per_s = mean_of(&BatchBenchRow::prefill_tokens_per_s);
    row.decode_s = mean_of(&BatchBenchRow::decode_s);
    row.ms_per_step = mean_of(&BatchBenchRow::ms_per_step);
    const SampleStats decode = sample_stats(decode_speeds);
    row.decode_tokens_per_s = decode.mean;
    row.decode_tokens_per_s_stddev = decode.stddev;
    row.runs = decode.count;
    return row;
}

}  // namespace

int find_knee(const std::vector<BatchBenchRow>& rows, double gain) {
    for (const BatchBenchRow& row : rows) {
        const auto doubled = std::find_if(rows.begin(), rows.end(), [&](const BatchBenchRow& r) { return r.batch == 2 * row.batch; });
        if (doubled != rows.end() && doubled->decode_tokens_per_s < (1.0 + gain) * row.decode_tokens_per_s) return row.batch;
    }
    return 0;
}

BatchBenchReport run_batch_bench(InferenceSession& session, const BatchBenchOptions& o) {
    if (o.batch_sizes.empty() || o.prompt_tokens < 1 || o.generate_tokens < 1) {
        throw InvalidArgument("batch-bench needs batch sizes, a prompt length and a number of tokens to generate");
    }
    std::vector<int> sizes = o.batch_sizes;
    std::sort(sizes.begin(), sizes.end());
    if (sizes.front() < 1) throw InvalidArgument("batch sizes must be positive");
    if (o.repetitions < 1) throw InvalidArgument("batch-bench needs at least one repetition");
    if (o.prompt_tokens + o.generate_tokens > session.context_size()) {
        throw InvalidArgument("PP + TG exceeds the session's context of " + std::to_string(session.context_size()) + " tokens");
    }
    std::mt19937 rng(4321);
    BatchBenchOptions warm_up = o;
    warm_up.generate_tokens = std::min(4, o.generate_tokens);
    run_one(session, 1, warm_up, rng);  // first-touch of weights and buffers, not reported
    BatchBenchReport report;
    for (int batch : sizes) {
        // A backend with a warm-up (a device compiling its kernels) pays it again for each batch
        // size's first passes, whose shapes no earlier run had.
        if (session.needs_warm_up()) run_one(session, batch, warm_up, rng);
        report.rows.push_back(run_repeated(session, batch, o, rng));
        o.progress.report("batch sizes", static_cast<int64_t>(report.rows.size()), static_cast<int64_t>(sizes.size()),
                          "B=" + std::to_string(batch));
        if (o.progress.cancelled()) {
            report.cancelled = true;
            return report;
        }
    }
    for (BatchBenchRow& row : report.rows) row.speedup = row.decode_tokens_per_s / report.rows.front().decode_tokens_per_s;
    report.knee_batch = find_knee(report.rows, o.knee_gain);
    return report;
}

}  // namespace inferscope
