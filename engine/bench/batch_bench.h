#pragma once
// The batch-size sweep, in the manner of llama.cpp's llama-batched-bench:
// for each batch size B, B sequences each get a prompt of PP tokens (one prefill step for all
// of them) and then TG decode steps of B tokens. Decode is memory-bound, so a step of B tokens
// reads the weights once for all of them: throughput rises with B until the step turns
// compute-bound (the knee).
#include <cstdint>
#include <vector>

#include "engine/core/progress.h"

namespace inferscope {

class InferenceSession;

struct BatchBenchOptions {
    std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64};
    int prompt_tokens = 64;     // PP
    int generate_tokens = 32;   // TG
    double knee_gain = 0.10;    // doubling B must gain at least this much throughput
    int repetitions = 1;        // timed runs per batch size; a row holds their means
    // Reported after each batch size (stage "batch sizes", item "B=8"); once cancelled, the
    // report holds the rows measured and no knee.
    Progress progress;
};

struct BatchBenchRow {
    int batch = 0;               // B
    int prompt_tokens = 0;       // PP
    int generate_tokens = 0;     // TG
    int64_t kv_tokens = 0;       // N_KV = B x (PP + TG)
    double prefill_s = 0;        // T_PP
    double prefill_tokens_per_s = 0;  // S_PP = B x PP / T_PP
    double decode_s = 0;         // T_TG
    double decode_tokens_per_s = 0;   // S_TG: the mean over the repetitions of B x TG / T_TG (aggregate)
    double decode_tokens_per_s_stddev = 0;  // sample standard deviation over the repetitions
    int runs = 0;                           // timed runs the row's means are over
    double ms_per_step = 0;      // T_TG / TG: what each request waits per token
    double speedup = 0;          // S_TG / S_TG at the first batch size
};

struct BatchBenchReport {
    std::vector<BatchBenchRow> rows;
    int knee_batch = 0;  // the first B after which doubling B gains < knee_gain (0: none)
    bool cancelled = false;
};

// The session needs room for max(batch_sizes) sequences of PP + TG tokens.
BatchBenchReport run_batch_bench(InferenceSession& session, const BatchBenchOptions& options);

// The knee of a throughput curve (rows sorted by batch size): the first B whose doubling
// (the row with batch 2B) gains less than `gain`.
int find_knee(const std::vector<BatchBenchRow>& rows, double gain);

}  // namespace inferscope
