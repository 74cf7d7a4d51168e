#pragma once
// The engine work behind the lab panels, as functions of a LabContext: each runs on the
// engine worker thread (as the body of a LabJob), builds the session it needs from the
// loaded model, reports progress and stops at the next cancellation check when replaced.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/sample_stats.h"
#include "engine/bench/batch_bench.h"
#include "engine/eval/soft_labels.h"
#include "engine/instruments/prefill_decode.h"
#include "engine/probes/outlier_analysis.h"
#include "engine/quant/scheme.h"
#include "engine/speculative/spec_measure.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/serving_sim.h"
#include "ui/lab_job.h"

namespace inferscope::ui {

struct BatchRunSettings {
    std::vector<int> batch_sizes = {1};
    int prompt_tokens = 32;    // PP: each sequence's cache before decoding
    int generate_tokens = 16;  // TG: decode steps measured (fewer are too noisy on small models)
    int repetitions = 1;       // timed runs per batch size
};

// run_batch_bench on a session with room for max(batch_sizes) sequences of PP + TG tokens;
// cancellation is checked after each batch size.
BatchBenchReport measure_batch_sizes(const LabContext& context, const BatchRunSettings& settings);

// A step-cost model from batch-bench rows, at one context (the middle of the rows' decode):
// a decode step of B tokens costs the row's ms/step; a prefill step of B x PP tokens (only
// those larger than every measured B, so that prompt chunks are priced by prompts) costs
// the row's prefill time. InvalidArgument when `rows` is empty.
StepCostModel cost_model_from_batch_rows(const std::vector<BatchBenchRow>& rows);

struct ReplayResult {
    ServingReport static_run;
    ServingReport continuous_run;
};

// The trace replayed through `slot_count` slots with static and with continuous batching, each
// step charged what `costs` predicts (no engine work: milliseconds for the reference request trace).
ReplayResult replay_trace(const StepCostModel& costs, const TraceOptions& trace, int slot_count);

// The same trace served for real on the loaded model (the engine executor, greedy), static
// then continuous, in a session with one sequence per slot. Progress follows the tokens
// made; cancellation cancels every request at the next step (then LabJobCancelled).
ReplayResult replay_trace_for_real(const LabContext& context, TraceOptions trace, int slot_count);

// (end-to-end latency in s, % of requests finished within it) for every finished request,
// in increasing latency: the distribution the replay chart plots.
std::vector<std::pair<double, double>> latency_distribution(const ServingReport& report);
// (value, % of values at or below it) for each of `values`, in increasing order.
std::vector<std::pair<double, double>> cumulative_shares(std::vector<double> values);

// The speculative tab's run, greedy: the draft is the loaded model under a quantization
// scheme (quantize_model) or a second GGUF file with the same vocabulary.
struct SpeculativeRunSettings {
    std::string draft_scheme;  // "int4:row", "q4_0", ...; empty when draft_path is given
    std::string draft_path;
    std::string prompt;        // tokenized as generation does, with BOS
    int n_predict = 64;
    int gamma = 4;
    int repetitions = 1;  // plain-then-speculative runs; the speed-up is their mean
};

struct SpeculativeRunResult {
    std::string draft_label;  // the scheme's name or the file's path
    int gamma = 0;
    SpeculativeMeasurement measured;  // the last run
    SampleStats speedup;              // over the runs
    std::string text;  // the speculative run's output, decoded
};

// measure_speculative on sessions just large enough for prompt + n_predict + gamma; progress
// covers quantizing the draft, plain decoding and the speculative run, each cancellable.
SpeculativeRunResult measure_speculative_decoding(const LabContext& context, const SpeculativeRunSettings& settings);

// measure_phases on a session just large enough for `options`, with the job's progress and
// cancellation.
PhasesReport measure_prefill_and_decode(const LabContext& context, PhasesOptions options);

// analyze_outliers of `prompt` (tokenized as generation does, with BOS) on a session just
// large enough for it; cancellation is checked before and after the single pass.
OutlierReport measure_outliers(const LabContext& context, const std::string& prompt, const OutlierAnalysisOptions& options);

// The logits row after a prompt, with the model that produced it (whose tokenizer names the
// tokens when the UI recomputes the distribution at another temperature).
struct NextTokenLogits {
    std::shared_ptr<const Model> model;
    std::vector<TokenId> prompt_ids;  // tokenized as generation does, with BOS
    std::vector<float> logits;        // [n_vocab]
    std::string student_scheme;         // the student is the model under this scheme; empty: none
    std::vector<float> student_logits;  // [n_vocab] the student's row after the same prompt; empty: none
};

// next_token_logits of `prompt` on a session just large enough for it; cancellation is
// checked before and after the single prefill.
NextTokenLogits measure_next_token_logits(const LabContext& context, const std::string& prompt);

// The loaded model quantized under the schemes asked for, each built on first use and kept for
// later jobs: quantizing a real model takes seconds, a prompt's pass does not. Used on the
// worker thread by one job at a time; a different loaded model empties it.
class StudentModels {
public:
    // The current and the previous scheme stay built, so toggling between two rebuilds nothing
    // (each holds a copy of the weights: dequantized F32 for INT and NF4 schemes).
    static constexpr size_t kKept = 2;

    // quantize_model of the loaded model under `scheme` on the context's threads, reporting
    // progress per matrix; LabJobCancelled when the job is replaced meanwhile.
    std::shared_ptr<const Model> get(const LabContext& context, const QuantScheme& scheme);

private:
    std::weak_ptr<const Model> teacher_;
    std::vector<std::pair<std::string, std::shared_ptr<const Model>>> students_;  // by scheme name, newest last
};

// measure_next_token_logits, plus the student's row after the same prompt: the loaded model
// under `student_scheme` (parse_quant_scheme's syntax), taken from `students`.
NextTokenLogits measure_teacher_and_student_logits(const LabContext& context, const std::string& prompt,
                                                   const std::string& student_scheme, StudentModels& students);

}  // namespace inferscope::ui
