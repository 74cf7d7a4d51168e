// `batch-bench`: aggregate decode throughput and per-request step time against batch size,
// with llama-batched-bench's columns and the knee.
#include <algorithm>
#include <cstdio>
#include <iostream>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/bench/batch_bench.h"

namespace inferscope::cli {
namespace {

struct BatchBenchCliOptions {
    ModelOptions model;
    std::vector<int> batch_sizes = {1, 2, 4, 8, 16, 32, 64};
    int prompt_tokens = 64;
    int generate_tokens = 32;
    int repetitions = 1;
    std::string output = "md";
};

void print_table(const BatchBenchReport& report, const std::string& format) {
    if (format == "json") {
        nlohmann::json rows = nlohmann::json::array();
        for (const BatchBenchRow& r : report.rows) {
            rows.push_back({{"PP", r.prompt_tokens}, {"TG", r.generate_tokens}, {"B", r.batch}, {"N_KV", r.kv_tokens},
                            {"T_PP_s", r.prefill_s}, {"S_PP_tokens_per_s", r.prefill_tokens_per_s}, {"T_TG_s", r.decode_s},
                            {"S_TG_tokens_per_s", r.decode_tokens_per_s}, {"S_TG_stddev", r.decode_tokens_per_s_stddev}, {"runs", r.runs},
                            {"ms_per_step", r.ms_per_step}, {"speedup", r.speedup}});
        }
        print_json({{"rows", rows}, {"knee_batch", report.knee_batch}});
        return;
    }
    const bool csv = format == "csv";
    const char* header = csv ? "PP,TG,B,N_KV,T_PP_s,S_PP_t/s,T_TG_s,S_TG_t/s,S_TG_stddev,ms_per_step,speedup,knee\n"
                             : "|    PP |    TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |  ± t/s | ms/step | speed-up |\n"
                               "|-------|-------|------|--------|----------|----------|----------|----------|--------|---------|----------|\n";
    std::cout << header;
    for (const BatchBenchRow& r : report.rows) {
        char line[256];
        const char* knee = r.batch == report.knee_batch ? " ← knee" : "";
        if (csv) {
            std::snprintf(line, sizeof line, "%d,%d,%d,%lld,%.3f,%.2f,%.3f,%.2f,%.2f,%.2f,%.2f,%d\n", r.prompt_tokens,
                          r.generate_tokens, r.batch, static_cast<long long>(r.kv_tokens), r.prefill_s, r.prefill_tokens_per_s,
                          r.decode_s, r.decode_tokens_per_s, r.decode_tokens_per_s_stddev, r.ms_per_step, r.speedup,
                          r.batch == report.knee_batch ? 1 : 0);
        } else {
            std::snprintf(line, sizeof line, "| %5d | %5d | %4d | %6lld | %8.3f | %8.2f | %8.3f | %8.2f | %6.2f | %7.2f | %7.2fx |%s\n",
                          r.prompt_tokens, r.generate_tokens, r.batch, static_cast<long long>(r.kv_tokens), r.prefill_s,
                          r.prefill_tokens_per_s, r.decode_s, r.decode_tokens_per_s, r.decode_tokens_per_s_stddev, r.ms_per_step,
                          r.speedup, knee);
        }
        std::cout << line;
    }
    if (!csv) {
        if (report.knee_batch > 0) {
            std::cout << "\nknee: B = " << report.knee_batch << " — doubling the batch beyond it gains less than 10 % "
                      << "throughput while every request's step keeps getting slower (the step is now compute-bound).\n";
        } else {
            std::cout << "\nno knee within these batch sizes: every doubling still gained at least 10 % throughput.\n";
        }
    }
}

}  // namespace

void add_batch_bench_command(CLI::App& app) {
    auto o = std::make_shared<BatchBenchCliOptions>();
    CLI::App* cmd = app.add_subcommand("batch-bench", "decode throughput and latency against batch size, and the knee");
    add_model_options(*cmd, o->model, true, /*with_context=*/false);
    cmd->add_option("-B,--batch-sizes", o->batch_sizes, "batch sizes")->delimiter(',')->capture_default_str();
    cmd->add_option("-c,--cache-tokens", o->prompt_tokens, "tokens in each sequence's cache before decoding (PP)")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("-n,--n-gen", o->generate_tokens, "decode steps (TG)")->check(positive())->capture_default_str();
    cmd->add_option("-r,--repetitions", o->repetitions, "timed runs per batch size: means, with the spread of S_TG")
        ->check(positive())
        ->capture_default_str();
    cmd->add_option("-o,--output", o->output, "output format")->check(CLI::IsMember({"md", "csv", "json"}))->capture_default_str();
    cmd->callback([o] {
        ModelOptions model_options = o->model;
        model_options.ctx = o->prompt_tokens + o->generate_tokens;
        const auto model = load_model(model_options);
        if (model_options.ctx > model->config().context_length) {
            throw InvalidArgument("-c " + std::to_string(o->prompt_tokens) + " plus -n " + std::to_string(o->generate_tokens) +
                                  " tokens exceed the model's context of " + std::to_string(model->config().context_length) +
                                  " tokens");
        }
        SessionOptions so = session_options(model_options);
        so.max_sequences = *std::max_element(o->batch_sizes.begin(), o->batch_sizes.end());
        InferenceSession session(model, so, make_backend(model_options, model, /*op_timestamps=*/false));
        BatchBenchOptions b;
        b.batch_sizes = o->batch_sizes;
        b.prompt_tokens = o->prompt_tokens;
        b.generate_tokens = o->generate_tokens;
        b.repetitions = o->repetitions;
        b.progress = stderr_progress("batch-bench");
        print_table(run_batch_bench(session, b), o->model.json ? "json" : o->output);
    });
}

}  // namespace inferscope::cli
