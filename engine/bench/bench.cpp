#include "engine/bench/bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <random>

#include "engine/backend/batch.h"
#include "engine/core/error.h"
#include "engine/core/sample_stats.h"
#include "engine/core/thread_pool.h"
#include "engine/plan/kv_formula.h"
#include "engine/model/model.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

using Clock = std::chrono::steady_clock;

// Feeds `n` random tokens to the sequence in steps of `ubatch` (only the last wants logits).
void feed_random(InferenceSession& session, SeqId seq, int n, int ubatch, std::mt19937& rng) {
    std::uniform_int_distribution<TokenId> token(0, session.model().config().n_vocab - 1);
    Batch batch;
    for (int done = 0; done < n; done += ubatch) {
        const int count = std::min(ubatch, n - done);
        batch.clear();
        const int first = session.sequence_length(seq);
        for (int i = 0; i < count; ++i) batch.push_back({token(rng), seq, first + i, done + i == n - 1});
        session.decode(batch);
    }
}

void add_submission(DeviceStepCost& cost, const DeviceSubmission& step) {
    cost.dispatches += step.dispatches;
    cost.barriers += step.barriers;
    cost.host_record_ms += static_cast<double>(step.host_record_ns) / 1e6;
    cost.replayed_steps += step.replayed;
    ++cost.steps;
}

// One timed run: fill to `depth` (untimed), then the test; returns tokens per second. A decode
// test adds each step's device submission to `device_steps` when given (and the backend has one).
double run_once(InferenceSession& session, const BenchResult& test, int ubatch, std::mt19937& rng,
                std::optional<DeviceStepCost>* device_steps) {
    const SeqId seq = session.new_sequence();
    try {
        if (test.depth > 0) feed_random(session, seq, test.depth, ubatch, rng);
        const auto start = Clock::now();
        int tokens = 0;
        if (test.n_prompt > 0) {
            feed_random(session, seq, test.n_prompt, ubatch, rng);
            tokens = test.n_prompt;
        } else {
            for (int i = 0; i < test.n_generate; ++i) {
                feed_random(session, seq, 1, 1, rng);
                const auto submitted = session.backend().last_forward_submission();
                if (device_steps != nullptr && submitted) {
                    if (!*device_steps) device_steps->emplace();
                    add_submission(**device_steps, *submitted);
                }
            }
            tokens = test.n_generate;
        }
        const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
        session.free_sequence(seq);
        return tokens / seconds;
    } catch (...) {
        session.free_sequence(seq);
        throw;
    }
}

void summarize(BenchResult& r) {
    const SampleStats stats = sample_stats(r.tokens_per_s);
    r.mean = stats.mean;
    r.stddev = stats.stddev;
    if (r.device_step && r.device_step->steps > 0) {
        const double steps = r.device_step->steps;
        r.device_step->dispatches /= steps;
        r.device_step->barriers /= steps;
        r.device_step->host_record_ms /= steps;
    }
}

// Passes over the bandwidth buffer for the membw figure and before each timed decode run
// (after a warm-up pass each): fewer before a run, so that reading its floor stays short
// beside the run itself.
constexpr int kBandwidthPasses = 5;
constexpr int kRunBandwidthPasses = 3;

void set_floor(BenchResult& t, const BenchReport& report) {
    const auto bytes = static_cast<double>(t.bytes_per_token);
    if (!t.bandwidth_per_run.empty()) {
        double percent_sum = 0;
        for (size_t i = 0; i < t.tokens_per_s.size(); ++i) percent_sum += 100.0 * t.tokens_per_s[i] * bytes / t.bandwidth_per_run[i];
        t.percent_of_floor = percent_sum / static_cast<double>(t.tokens_per_s.size());
        std::vector<double> sorted = t.bandwidth_per_run;
        std::sort(sorted.begin(), sorted.end());
        t.floor_tokens_per_s = sorted[sorted.size() / 2] / bytes;
    } else if (report.bandwidth) {
        t.floor_tokens_per_s = report.bandwidth->bytes_per_second / bytes;
        t.percent_of_floor = 100.0 * t.mean / t.floor_tokens_per_s;
    }
}

std::vector<BenchResult> planned_tests(const BenchOptions& o) {
    std::vector<BenchResult> tests;
    const auto add = [&tests](const std::string& name, int n_prompt, int n_generate, int depth) {
        BenchResult t;
        t.test = name;
        t.n_prompt = n_prompt;
        t.n_generate = n_generate;
        t.depth = depth;
        tests.push_back(std::move(t));
    };
    for (int depth : o.depths) {
        const std::string suffix = depth > 0 ? " @ d" + std::to_string(depth) : "";
        for (int p : o.prompt_lengths) add("pp" + std::to_string(p) + suffix, p, 0, depth);
        for (int g : o.generate_lengths) add("tg" + std::to_string(g) + suffix, 0, g, depth);
    }
    return tests;
}

}  // namespace

uint64_t weight_bytes_read_per_token(const Model& model) {
    uint64_t bytes = model.output().bytes();
    for (const LayerWeights& l : model.layers()) {
        for (const WeightMatrix* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) bytes += w->bytes();
    }
    return bytes;
}

BenchReport run_bench(InferenceSession& session, const BenchOptions& options) {
    if (options.repetitions < 1 || options.ubatch < 1) throw InvalidArgument("repetitions and ubatch must be positive");
    std::vector<BenchResult> tests = planned_tests(options);
    for (const BenchResult& t : tests) {
        if (t.n_prompt < 0 || t.n_generate < 0 || t.depth < 0) throw InvalidArgument("test sizes must not be negative");
        if (t.depth + std::max(t.n_prompt, t.n_generate) > session.context_size()) {
            throw InvalidArgument("test " + t.test + " needs " + std::to_string(t.depth + std::max(t.n_prompt, t.n_generate)) +
                                  " tokens of context; the session has " + std::to_string(session.context_size()));
        }
    }
    BenchReport report;
    report.weight_bytes_per_token = weight_bytes_read_per_token(session.model());
    // The probe's readings run on a pool of their own that lives only for the reading: its
    // threads then neither spin nor yield beside the session's during a timed run.
    const auto read_bandwidth = [&](const ReadBandwidthProbe& probe, int passes) {
        ThreadPool pool(session.thread_count());
        return probe.measure(pool, passes);
    };
    std::optional<ReadBandwidthProbe> run_probe;
    if (options.given_bandwidth_bytes_per_s > 0) {
        report.bandwidth = BandwidthResult{options.given_bandwidth_bytes_per_s, 0, 0};
    } else if (options.measure_bandwidth) {
        {
            ThreadPool pool(session.thread_count());
            run_probe.emplace(pool, options.bandwidth_buffer_bytes);
        }
        report.bandwidth = read_bandwidth(*run_probe, kBandwidthPasses);
    }
    const KvDtype kv_dtype = session.kv_cache().layout().dtype();
    std::mt19937 rng(1234);
    // Round r runs every test once (round 0 is the warm-up), so that a slow minute on a shared
    // machine falls on all the tests alike and their ratios (such as the loss at depth) hold.
    const auto runs_total = static_cast<int64_t>(tests.size()) * (options.repetitions + 1);
    int64_t runs_done = 0;
    for (int r = 0; r <= options.repetitions; ++r) {
        const bool timed = r > 0;
        for (BenchResult& t : tests) {
            if (timed && t.n_generate > 0 && run_probe) {
                t.bandwidth_per_run.push_back(read_bandwidth(*run_probe, kRunBandwidthPasses).bytes_per_second);
            }
            const double tps = run_once(session, t, options.ubatch, rng, timed ? &t.device_step : nullptr);
            if (timed) t.tokens_per_s.push_back(tps);
            options.progress.report(t.test, ++runs_done, runs_total,
                                    timed ? "run " + std::to_string(r) + "/" + std::to_string(options.repetitions) : "warm-up");
            if (options.progress.cancelled()) {
                report.cancelled = true;
                return report;
            }
        }
    }
    for (BenchResult& t : tests) {
        summarize(t);
        if (t.n_generate > 0) {
            // The average step reads the weights and the cache at its depth plus half the test
            // (local layers only their window of it).
            const int64_t depth = t.depth + t.n_generate / 2;
            t.bytes_per_token = report.weight_bytes_per_token +
                                static_cast<uint64_t>(kv_window_split(session.model().config(), kv_dtype, depth).windowed_bytes());
            set_floor(t, report);
        }
        report.results.push_back(t);
    }
    return report;
}

}  // namespace inferscope
