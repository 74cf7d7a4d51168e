#include "engine/instruments/prefill_decode.h"

#include <algorithm>
#include <string>

#include "engine/core/error.h"
#include "engine/bench/bench.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

void check_positive(const std::vector<int>& values, const char* what) {
    if (values.empty()) throw InvalidArgument(std::string("no ") + what + " given");
    for (int v : values) {
        if (v < 1) throw InvalidArgument(std::string(what) + " must be positive (got " + std::to_string(v) + ")");
    }
}

BenchOptions bench_options(const PhasesOptions& o) {
    BenchOptions b;
    b.repetitions = o.repetitions;
    b.ubatch = o.ubatch;
    b.measure_bandwidth = false;
    b.prompt_lengths.clear();
    b.generate_lengths.clear();
    b.depths = {0};
    return b;
}

}  // namespace

int phases_context_needed(const PhasesOptions& o) {
    const int longest_prompt = o.prompt_lengths.empty() ? 0 : *std::max_element(o.prompt_lengths.begin(), o.prompt_lengths.end());
    const int deepest = o.context_lengths.empty() ? 0 : *std::max_element(o.context_lengths.begin(), o.context_lengths.end());
    return std::max(longest_prompt, deepest + o.decode_steps);
}

void check_phases_options(const PhasesOptions& o, int max_context) {
    check_positive(o.prompt_lengths, "prompt lengths");
    check_positive(o.context_lengths, "context lengths");
    if (o.decode_steps < 1 || o.repetitions < 1 || o.ubatch < 1) {
        throw InvalidArgument("decode steps, repetitions and ubatch must be positive");
    }
    for (int p : o.prompt_lengths) {
        if (p > max_context) {
            throw InvalidArgument("prompt length " + std::to_string(p) + " is beyond the context of " +
                                  std::to_string(max_context) + " tokens");
        }
    }
    for (int c : o.context_lengths) {
        if (c + o.decode_steps > max_context) {
            throw InvalidArgument("context length " + std::to_string(c) + " plus " + std::to_string(o.decode_steps) +
                                  " decode steps is beyond the context of " + std::to_string(max_context) + " tokens");
        }
    }
}

PhasesReport measure_phases(InferenceSession& session, const PhasesOptions& o) {
    check_phases_options(o, session.context_size());
    PhasesReport report;
    const double prefill_share = static_cast<double>(o.prompt_lengths.size()) /
                                 static_cast<double>(o.prompt_lengths.size() + o.context_lengths.size());
    BenchOptions prefill = bench_options(o);
    prefill.prompt_lengths = o.prompt_lengths;
    prefill.progress = o.progress.share(0, prefill_share);
    const BenchReport prefill_report = run_bench(session, prefill);
    if (prefill_report.cancelled) return {.prefill = {}, .decode = {}, .cancelled = true};
    for (const BenchResult& r : prefill_report.results) {
        PrefillRow row;
        row.n_prompt = r.n_prompt;
        row.tokens_per_s = r.mean;
        row.tokens_per_s_stddev = r.stddev;
        row.total_ms = r.n_prompt * 1000.0 / r.mean;
        row.ms_per_token = row.total_ms / r.n_prompt;
        row.ttft_ms = row.total_ms;
        report.prefill.push_back(row);
    }
    BenchOptions decode = bench_options(o);
    decode.generate_lengths = {o.decode_steps};
    decode.depths = o.context_lengths;
    decode.progress = o.progress.share(prefill_share, 1);
    const BenchReport decode_report = run_bench(session, decode);
    if (decode_report.cancelled) return {.prefill = {}, .decode = {}, .cancelled = true};
    for (const BenchResult& r : decode_report.results) {
        report.decode.push_back({r.depth, 1000.0 / r.mean, r.mean, r.stddev});
    }
    return report;
}

}  // namespace inferscope
