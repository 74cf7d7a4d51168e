// `serve-sim`: a request trace served with static and continuous batching, simulated from
// step costs measured on the model (or run for real with --real), side by side.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"
#include "engine/runtime/serving_sim.h"

namespace inferscope::cli {
namespace {

struct ServeSimOptions {
    ModelOptions model;
    std::string policy = "both";
    TraceCliOptions trace;
    int slots = 8;
    bool real = false;
};

nlohmann::json summary_json(const ServingReport& r, const char* mode) {
    const int64_t padding = [&] {
        int64_t total = 0;
        for (const SchedulerStep& s : r.steps) total += s.padding_slots;
        return total;
    }();
    return {{"policy", batching_policy_name(r.policy)},
            {"mode", mode},
            {"requests", r.requests.size()},
            {"generated_tokens", r.generated_tokens},
            {"steps", r.steps.size()},
            {"padding_slot_steps", padding},
            {"makespan_s", r.makespan_s},
            {"throughput_tokens_per_s", r.throughput_tokens_per_s()},
            {"latency_mean_s", r.mean(&RequestMetrics::end_to_end_s)},
            {"latency_median_s", r.percentile(&RequestMetrics::end_to_end_s, 50)},
            {"latency_p99_s", r.percentile(&RequestMetrics::end_to_end_s, 99)},
            {"ttft_mean_s", r.mean(&RequestMetrics::time_to_first_token_s)},
            {"queue_wait_mean_s", r.mean(&RequestMetrics::queue_wait_s)},
            {"inter_token_mean_ms", 1000.0 * r.mean(&RequestMetrics::inter_token_s)}};
}

void print_side_by_side(const std::vector<nlohmann::json>& runs, const TraceOptions& trace, int slots) {
    std::printf("trace: %d requests, %lld output tokens log-normal (median %.0f, max %d), %d-token prompts, %s; %d slots\n",
                trace.requests, static_cast<long long>(runs.front()["generated_tokens"].get<int64_t>()),
                trace.median_output_tokens, trace.max_output_tokens, trace.prompt_tokens,
                trace.arrival == ArrivalPattern::AllAtOnce ? "all arriving at t = 0" : "Poisson arrivals", slots);
    std::printf("latencies are measured from each request's arrival\n\n");
    std::printf("| %-26s |", "");
    for (const auto& r : runs) std::printf(" %-22s |", (r["policy"].get<std::string>() + " (" + r["mode"].get<std::string>() + ")").c_str());
    std::printf("\n|%s|", std::string(28, '-').c_str());
    for (size_t i = 0; i < runs.size(); ++i) std::printf("%s|", std::string(24, '-').c_str());
    std::printf("\n");
    const auto row = [&](const char* label, const char* key, double scale, const char* unit) {
        std::printf("| %-26s |", label);
        for (const auto& r : runs) std::printf(" %16.2f %-5s |", r[key].get<double>() * scale, unit);
        std::printf("\n");
    };
    row("throughput", "throughput_tokens_per_s", 1, "tok/s");
    row("makespan", "makespan_s", 1, "s");
    row("end-to-end latency, mean", "latency_mean_s", 1, "s");
    row("end-to-end latency, median", "latency_median_s", 1, "s");
    row("end-to-end latency, p99", "latency_p99_s", 1, "s");
    row("time to first token, mean", "ttft_mean_s", 1, "s");
    row("queue wait, mean", "queue_wait_mean_s", 1, "s");
    row("inter-token latency, mean", "inter_token_mean_ms", 1, "ms");
    std::printf("| %-26s |", "steps (padding slot-steps)");
    for (const auto& r : runs) {
        std::printf(" %9zu (%9lld)  |", r["steps"].get<size_t>(), static_cast<long long>(r["padding_slot_steps"].get<int64_t>()));
    }
    std::printf("\n");
}

void run_serve_sim(const ServeSimOptions& o) {
    TraceOptions trace_options = o.trace.trace();
    ModelOptions mo = o.model;
    // Room for the longest request, and for the cost model's largest prompt chunk after it.
    constexpr int kLargestChunk = 128;
    const int64_t context = int64_t{trace_options.prompt_tokens} + trace_options.max_output_tokens + 1 + kLargestChunk;
    const auto model = load_model(mo);
    if (context > model->config().context_length) {
        throw InvalidArgument("--prompt " + std::to_string(trace_options.prompt_tokens) + " plus --max " +
                              std::to_string(trace_options.max_output_tokens) + " tokens (and " + std::to_string(kLargestChunk + 1) +
                              " for measuring step costs) exceed the model's context of " +
                              std::to_string(model->config().context_length) + " tokens");
    }
    mo.ctx = static_cast<int>(context);
    trace_options.vocab_size = model->config().n_vocab;
    SessionOptions so = session_options(mo);
    so.max_sequences = o.slots;
    InferenceSession session(model, so, make_backend(mo, model, /*op_timestamps=*/false));
    const std::vector<ServingRequest> trace = generate_trace(trace_options);

    std::vector<int> batches;
    for (int b = 1; b < o.slots; b *= 2) batches.push_back(b);
    batches.push_back(o.slots);
    std::vector<int> chunks;  // steps with more tokens than slots: the newcomers' prompts
    for (int c = 2 * o.slots; c <= kLargestChunk; c *= 2) chunks.push_back(c);
    const std::vector<int> contexts = {trace_options.prompt_tokens, trace_options.prompt_tokens + trace_options.max_output_tokens};
    const StepCostModel costs = StepCostModel::measure(session, batches, chunks, contexts, 5, stderr_progress("serve-sim"));

    std::vector<BatchingPolicy> policies;
    if (o.policy != "continuous") policies.push_back(BatchingPolicy::Static);
    if (o.policy != "static") policies.push_back(BatchingPolicy::Continuous);
    std::vector<nlohmann::json> runs;
    for (BatchingPolicy policy : policies) {
        SchedulerOptions options;
        options.policy = policy;
        options.slots = o.slots;
        const auto simulated = make_simulated_executor(costs);
        runs.push_back(summary_json(serve(trace, options, *simulated), "simulated"));
        if (o.real) {
            std::fprintf(stderr, "serve-sim: running %s batching for real\n", std::string(batching_policy_name(policy)).c_str());
            SamplingParams greedy;
            greedy.temperature = 0;
            const auto engine = make_engine_executor(session, greedy);
            runs.push_back(summary_json(serve(trace, options, *engine), "real"));
        }
    }
    if (o.model.json) {
        nlohmann::json points = nlohmann::json::array();
        for (const auto& p : costs.points()) points.push_back({{"tokens", p.tokens}, {"context", p.context}, {"seconds", p.seconds}});
        print_json({{"runs", runs}, {"cost_model", {{"step_points", points}}}});
        return;
    }
    print_side_by_side(runs, trace_options, o.slots);
}

}  // namespace

void add_serve_sim_command(CLI::App& app) {
    auto o = std::make_shared<ServeSimOptions>();
    CLI::App* cmd = app.add_subcommand("serve-sim", "replay a request trace with static and continuous batching");
    add_model_options(*cmd, o->model, true, /*with_context=*/false);
    cmd->add_option("--policy", o->policy, "static, continuous or both")
        ->check(CLI::IsMember({"static", "continuous", "both"}))
        ->capture_default_str();
    add_trace_options(*cmd, o->trace);
    cmd->add_option("--slots", o->slots, "sequences decoded together")->check(positive())->capture_default_str();
    cmd->add_flag("--real", o->real, "also run the trace on the engine (slow) and show it beside the simulation");
    cmd->callback([o] { run_serve_sim(*o); });
}

}  // namespace inferscope::cli
