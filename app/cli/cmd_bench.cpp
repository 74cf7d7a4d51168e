// `bench`: prefill and decode throughput in the manner of llama-bench, with decode set
// against the memory-bandwidth floor.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <utility>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/bench/bench.h"
#include "engine/core/error.h"

namespace inferscope::cli {
namespace {

struct BenchCliOptions {
    ModelOptions model;
    std::vector<int> prompt_lengths = {512};
    std::vector<int> generate_lengths = {128};
    std::vector<int> depths = {0};
    int repetitions = 5;
    int ubatch = 512;
    std::string output = "md";
    bool membw = false;
    double membw_gbs = 0;  // given bandwidth, GB/s (10^9 bytes/s); 0: measure host RAM, or the device with --backend vulkan
};

struct Row {
    nlohmann::json json;
    std::vector<std::string> cells;
};

std::string fixed(double value, int decimals) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
    return buffer;
}

// Where the bandwidth floor's figure comes from.
enum class BandwidthSource { HostRead, Given, DeviceRead };

// The JSON name of `source` and the membw row's label.
std::pair<const char*, const char*> source_names(BandwidthSource source) {
    switch (source) {
        case BandwidthSource::Given:
            return {"given", "membw (given)"};
        case BandwidthSource::DeviceRead:
            return {"device read", "membw (device read)"};
        case BandwidthSource::HostRead:
            break;
    }
    return {"host read", "membw (read)"};
}

std::vector<Row> rows_of(const Model& model, const InferenceSession& session, const BenchReport& report, bool membw,
                         BandwidthSource source) {
    const auto bytes = static_cast<double>(model.file().file_size());
    const std::string size = bytes >= 1024.0 * 1024 * 1024 ? fixed(bytes / (1024.0 * 1024 * 1024), 2) + " GiB"
                                                            : fixed(bytes / (1024.0 * 1024), 2) + " MiB";
    const auto parameters = static_cast<double>(model.parameter_count());
    const std::string params = parameters >= 1e9 ? fixed(parameters / 1e9, 2) + " B" : fixed(parameters / 1e6, 2) + " M";
    const std::string backend = session.backend().name();
    const std::string threads = std::to_string(session.thread_count());
    std::vector<Row> rows;
    if (membw && report.bandwidth) {
        const double gbps = report.bandwidth->bytes_per_second / 1e9;
        const auto [source_name, label] = source_names(source);
        rows.push_back({{{"test", "membw"},
                         {"read_bytes_per_s", report.bandwidth->bytes_per_second},
                         {"buffer_bytes", report.bandwidth->buffer_bytes},
                         {"threads", report.bandwidth->threads},
                         {"given", source == BandwidthSource::Given},
                         {"source", source_name}},
                        {model.config().name, size, params, backend, threads, label, fixed(gbps, 2) + " GB/s", ""}});
    }
    for (const BenchResult& r : report.results) {
        const bool decode = r.n_generate > 0;
        nlohmann::json j = {{"model", model.config().name},      {"model_bytes", model.file().file_size()},
                            {"weights_held", model.file().holding_name()},
                            {"parameters", model.parameter_count()}, {"backend", backend},
                            {"threads", session.thread_count()},     {"test", r.test},
                            {"n_prompt", r.n_prompt},                {"n_generate", r.n_generate},
                            {"depth", r.depth},                      {"tokens_per_s_mean", r.mean},
                            {"tokens_per_s_stddev", r.stddev},       {"samples", r.tokens_per_s}};
        std::string floor_cell;
        if (decode) {
            j["bytes_read_per_token"] = r.bytes_per_token;
            if (report.bandwidth) {
                if (!r.bandwidth_per_run.empty()) j["read_bytes_per_s_per_run"] = r.bandwidth_per_run;
                j["floor_tokens_per_s"] = r.floor_tokens_per_s;
                j["percent_of_bandwidth_floor"] = r.percent_of_floor;
                floor_cell = fixed(r.percent_of_floor, 1) + " % of " + fixed(r.floor_tokens_per_s, 1);
            }
        }
        if (r.device_step) {
            j["device_step"] = {{"dispatches", r.device_step->dispatches}, {"barriers", r.device_step->barriers},
                                {"host_record_ms", r.device_step->host_record_ms}, {"steps", r.device_step->steps},
                                {"replayed_steps", r.device_step->replayed_steps}};
        }
        rows.push_back({j, {model.config().name, size, params, backend, threads, r.test,
                            fixed(r.mean, 2) + " ± " + fixed(r.stddev, 2), floor_cell}});
    }
    return rows;
}

// Below the table: what each decode step submitted to the device (GPU backends).
void print_device_steps(const std::vector<Row>& rows) {
    for (const Row& r : rows) {
        if (!r.json.contains("device_step")) continue;
        const nlohmann::json& d = r.json["device_step"];
        std::cout << "\n" << r.json["test"].get<std::string>() << ": per decode step " << fixed(d["dispatches"].get<double>(), 1)
                  << " dispatches, " << fixed(d["barriers"].get<double>(), 1) << " barriers, host recording "
                  << fixed(d["host_record_ms"].get<double>(), 3) << " ms (" << d["replayed_steps"].get<int>() << " of "
                  << d["steps"].get<int>() << " steps replayed)\n";
    }
}

void print_rows(const std::vector<Row>& rows, const std::string& format) {
    static const std::vector<std::string> kHeader = {"model", "size", "params", "backend", "threads", "test", "t/s",
                                                     "% of bandwidth floor (t/s)"};
    if (format == "json") {
        nlohmann::json all = nlohmann::json::array();
        for (const Row& r : rows) all.push_back(r.json);
        print_json(all);
    } else if (format == "jsonl") {
        for (const Row& r : rows) print_json(r.json);
    } else if (format == "csv") {
        for (size_t i = 0; i < kHeader.size(); ++i) std::cout << (i ? "," : "") << '"' << kHeader[i] << '"';
        std::cout << '\n';
        for (const Row& r : rows) {
            for (size_t i = 0; i < r.cells.size(); ++i) std::cout << (i ? "," : "") << '"' << r.cells[i] << '"';
            std::cout << '\n';
        }
    } else {
        const auto line = [](const std::vector<std::string>& cells) {
            std::cout << '|';
            for (const auto& c : cells) std::cout << ' ' << c << " |";
            std::cout << '\n';
        };
        line(kHeader);
        line(std::vector<std::string>(kHeader.size(), "---"));
        for (const Row& r : rows) line(r.cells);
        print_device_steps(rows);
    }
}

void run_bench_command(BenchCliOptions o) {
    int longest = 0;
    for (int n : o.prompt_lengths) longest = std::max(longest, n);
    for (int n : o.generate_lengths) longest = std::max(longest, n);
    const int deepest = *std::max_element(o.depths.begin(), o.depths.end());
    if (o.model.ctx == 0 && longest > 0) o.model.ctx = deepest + longest;
    const auto model = load_model(o.model);
    InferenceSession session(model, session_options(o.model), make_backend(o.model, model, /*op_timestamps=*/false));
    BenchOptions b;
    b.prompt_lengths = o.prompt_lengths;
    b.generate_lengths = o.generate_lengths;
    b.depths = o.depths;
    b.repetitions = o.repetitions;
    b.ubatch = o.ubatch;
    b.measure_bandwidth = o.membw || std::any_of(o.generate_lengths.begin(), o.generate_lengths.end(), [](int n) { return n > 0; });
    b.given_bandwidth_bytes_per_s = o.membw_gbs * 1e9;
    BandwidthSource source = o.membw_gbs > 0 ? BandwidthSource::Given : BandwidthSource::HostRead;
    if (o.model.backend == "vulkan" && o.membw_gbs <= 0 && b.measure_bandwidth) {
        // Host RAM bandwidth says nothing about a GPU's ceiling: the floor is the device's own.
        b.given_bandwidth_bytes_per_s = device_read_bandwidth(session.backend());
        source = BandwidthSource::DeviceRead;
        if (b.given_bandwidth_bytes_per_s <= 0) {
            b.measure_bandwidth = false;
            std::fprintf(stderr, "note: no bandwidth floor: the device cannot time its reads (give --membw-gbs)\n");
        }
    }
    b.progress = stderr_progress("bench");
    const BenchReport report = run_bench(session, b);
    print_rows(rows_of(*model, session, report, o.membw, source), o.model.json ? "json" : o.output);
}

}  // namespace

void add_bench_command(CLI::App& app) {
    auto o = std::make_shared<BenchCliOptions>();
    CLI::App* cmd = app.add_subcommand("bench", "prefill and decode throughput, decode against the bandwidth floor");
    add_model_options(*cmd, o->model, true);
    cmd->add_option("-p,--n-prompt", o->prompt_lengths, "prefill tests: prompt lengths (0: none)")->delimiter(',')->capture_default_str();
    cmd->add_option("-n,--n-gen", o->generate_lengths, "decode tests: tokens to generate (0: none)")->delimiter(',')->capture_default_str();
    cmd->add_option("-d,--n-depth", o->depths, "run the tests after filling the cache to these depths")->delimiter(',')->capture_default_str();
    cmd->add_option("-r,--repetitions", o->repetitions, "timed runs per test (after one warm-up)")->check(positive())->capture_default_str();
    cmd->add_option("--ubatch", o->ubatch, "prompt tokens per forward step")->check(positive())->capture_default_str();
    cmd->add_option("-o,--output", o->output, "output format")->check(CLI::IsMember({"md", "csv", "json", "jsonl"}))->capture_default_str();
    cmd->add_flag("--membw", o->membw, "also report the measured memory read bandwidth (the device's with --backend vulkan)");
    cmd->add_option("--membw-gbs", o->membw_gbs, "bandwidth floor from this memory bandwidth in GB/s instead of measuring it")
        ->check(positive());
    cmd->callback([o] {
        // "-p 0" or "-n 0" turn a kind of test off, as in llama-bench.
        std::erase(o->prompt_lengths, 0);
        std::erase(o->generate_lengths, 0);
        if (o->depths.empty()) o->depths = {0};
        if (o->prompt_lengths.empty() && o->generate_lengths.empty() && !o->membw) {
            throw InvalidArgument("nothing to run: give -p, -n or --membw");
        }
        run_bench_command(*o);
    });
}

}  // namespace inferscope::cli
