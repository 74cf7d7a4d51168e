#include "app/cli/cli_common.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "app/cli/cli_checks.h"
#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/synth/builtin_models.h"
#ifdef INFERSCOPE_HAS_VULKAN
#include "gpu/vulkan_backend_factory.h"
#endif

namespace inferscope::cli {

void add_model_options(CLI::App& command, ModelOptions& options, bool with_runtime, bool with_context) {
    command.add_option("-m,--model", options.model_path, "GGUF model file, or builtin:stories260K (the default) or builtin:synthetic");
    command.add_flag("--json", options.json, "machine-readable JSON on stdout");
    if (!with_runtime) return;
    command.add_option("-t,--threads", options.threads, "worker threads (default: physical cores)")
        ->check(non_negative());
    if (with_context) {
        command.add_option("-c,--ctx-size", options.ctx, "context size in tokens (default: the model's, at most 4096)")
            ->check(non_negative());
    }
    command.add_option("--kv-type", options.kv_type, "KV cache element type")
        ->check(CLI::IsMember({"f16", "f32"}))
        ->capture_default_str();
    command.add_flag("--kv-full-cache", options.kv_full_cache,
                     "sliding-window layers keep every position's K and V instead of recycling the blocks behind "
                     "their window");
    command.add_option("--backend", options.backend, "compute backend (vulkan: the GPU, see `devices`)")
        ->check(CLI::IsMember({"cpu", "vulkan"}))
        ->capture_default_str();
}

namespace {

void print_load_warnings(const Tokenizer& tokenizer) {
    for (const std::string& warning : tokenizer.load_warnings()) {
        std::fprintf(stderr, "warning: %s\n", terminal_safe(warning).c_str());
    }
}

}  // namespace

std::shared_ptr<const Model> load_model(const ModelOptions& options) {
    if (options.model_path.empty()) {
        const std::string label(builtin_model_label(BuiltinModel::Stories260K));
        std::fprintf(stderr, "note: no model given (-m); using the %s\n", label.c_str());
        return load_builtin_model(BuiltinModel::Stories260K);
    }
    if (const auto builtin = builtin_model_named(options.model_path)) return load_builtin_model(*builtin);
    auto model = Model::load(options.model_path);
    print_load_warnings(model->tokenizer());
    return model;
}

std::shared_ptr<const Tokenizer> load_tokenizer(const ModelOptions& options) {
    if (options.model_path.empty() || builtin_model_named(options.model_path)) {
        const auto model = load_model(options);
        return std::shared_ptr<const Tokenizer>(model, &model->tokenizer());
    }
    auto tokenizer = Tokenizer::from_gguf(GgufFile::open(options.model_path));
    print_load_warnings(*tokenizer);
    return tokenizer;
}

void add_prompt_options(CLI::App& command, std::string& prompt, const std::string& description, bool required) {
    // Two options that exclude each other, not an option group: CLI11 2.1 takes an empty
    // argument for the name of a command's (nameless) option group and then loops forever.
    CLI::Option* text = command.add_option("-p,--prompt", prompt, description);
    if (!required) text->capture_default_str();
    CLI::Option* file = command.add_option_function<std::string>(
        "-f,--file", [&prompt](const std::string& path) { prompt = read_text_file(path); }, "read the prompt from this file");
    text->excludes(file);
    if (required) {
        command.parse_complete_callback([text, file] {
            if (text->count() + file->count() == 0) throw CLI::RequiredError("-p,--prompt or -f,--file");
        });
    }
}

void add_sampling_options(CLI::App& command, SamplingParams& sampling) {
    command.add_option("--temp", sampling.temperature, "temperature (0: greedy)")->capture_default_str();
    command.add_option("--top-k", sampling.top_k, "top-k (0: off)")->capture_default_str();
    command.add_option("--top-p", sampling.top_p, "top-p (1: off)")->check(within(0.0, 1.0))->capture_default_str();
    command.add_option("--min-p", sampling.min_p, "min-p (0: off)")->check(within(0.0, 1.0))->capture_default_str();
    command.add_option("--repeat-penalty", sampling.repeat_penalty, "repetition penalty (1: off)")
        ->check(positive())->capture_default_str();
    command.add_option("--repeat-last-n", sampling.repeat_last_n, "tokens the penalty looks back (-1: all)")
        ->capture_default_str();
    command.add_option("-s,--seed", sampling.seed, "random seed")->capture_default_str();
}

TerminalTextStream::TerminalTextStream() : terminal_(::isatty(STDOUT_FILENO) != 0) {}

void TerminalTextStream::write(std::string_view piece) {
    if (!terminal_) {
        std::cout << piece << std::flush;
        return;
    }
    std::string text = held_ + std::string(piece);
    held_.clear();
    if (!text.empty() && static_cast<unsigned char>(text.back()) == 0xc2) {
        held_ = text.back();
        text.pop_back();
    }
    std::cout << terminal_safe(text, /*keep_line_breaks=*/true) << std::flush;
}

void TerminalTextStream::flush() {
    if (!held_.empty()) std::cout << held_ << std::flush;
    held_.clear();
}

std::string terminal_safe(std::string_view text, bool keep_line_breaks) {
    std::string out;
    out.reserve(text.size());
    char escaped[8];
    for (size_t i = 0; i < text.size(); ++i) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const bool line_break = byte == '\n' || byte == '\t' || byte == '\r';
        if ((byte < 0x20 && !(keep_line_breaks && line_break)) || byte == 0x7f) {
            std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
            out += escaped;
        } else if (byte == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
            out += escaped;
            ++i;
        } else {
            out += static_cast<char>(byte);
        }
    }
    return out;
}

Progress stderr_progress(const std::string& label) {
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    auto last_stage = std::make_shared<std::string>();
    return Progress([label, terminal, last_stage](const ProgressUpdate& u) {
        const bool last = u.done == u.total;
        const std::string line = label + ": " + std::string(u.stage) + " " + std::to_string(u.done) + "/" +
                                 std::to_string(u.total) + (u.item.empty() ? "" : " " + std::string(u.item));
        if (terminal) {
            std::fprintf(stderr, "\r%-70s%s", line.c_str(), last ? "\n" : "");
        } else if (last || u.stage != *last_stage || (u.total > 0 && u.done * 10 / u.total != (u.done - 1) * 10 / u.total)) {
            std::fprintf(stderr, "%s\n", line.c_str());
        }
        *last_stage = u.stage;
        std::fflush(stderr);
    });
}

std::string read_text_file(const std::string& path) { return read_regular_file(path, "a text file", kMaxTextFileBytes); }

std::string api_key_from_env(const std::string& variable) {
    if (variable.empty()) return {};
    const char* value = std::getenv(variable.c_str());
    if (value == nullptr || *value == '\0') throw InvalidArgument("--api-key-env " + variable + ": the variable is not set");
    return value;
}

SessionOptions session_options(const ModelOptions& options) {
    SessionOptions s;
    s.n_threads = options.threads;
    s.n_ctx = options.ctx;
    s.kv_dtype = options.kv_type == "f32" ? KvDtype::F32 : KvDtype::F16;
    s.recycle_window_blocks = !options.kv_full_cache;
    return s;
}

std::unique_ptr<Backend> make_backend(const ModelOptions& options, const std::shared_ptr<const Model>& model,
                                      bool op_timestamps) {
    if (options.backend != "vulkan") return nullptr;
#ifdef INFERSCOPE_HAS_VULKAN
    gpu::VulkanBackendOptions vulkan;
    vulkan.op_timestamps = op_timestamps;
    return gpu::make_vulkan_backend(model, vulkan);
#else
    (void)model;
    (void)op_timestamps;
    throw UnsupportedError("this inferscope-cli was built without the Vulkan backend (INFERSCOPE_ENGINE_ONLY=ON); "
                           "use --backend cpu");
#endif
}

double warm_up(InferenceSession& session, int most_logit_rows) {
    if (!session.needs_warm_up()) return 0;
    const auto start = std::chrono::steady_clock::now();
    session.warm_up(most_logit_rows);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "warm-up: the GPU's kernels compiled and run once in %.2f ms (not in the timings below)\n", ms);
    return ms;
}

double device_read_bandwidth(Backend& backend) {
#ifdef INFERSCOPE_HAS_VULKAN
    return gpu::vulkan_read_bandwidth(backend);
#else
    (void)backend;
    return 0;
#endif
}

std::vector<TokenId> tokenize_prompt(const Model& model, const std::string& text, bool add_special) {
    return model.tokenizer().encode(text, add_special, /*parse_special=*/true);
}

void print_json(const nlohmann::json& value) {
    std::cout << value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << std::endl;
}

TraceOptions TraceCliOptions::trace() const {
    if (arrival != "all" && arrival != "poisson") throw InvalidArgument("--arrival is all or poisson");
    TraceOptions t = options;
    t.arrival = arrival == "all" ? ArrivalPattern::AllAtOnce : ArrivalPattern::Poisson;
    return t;
}

void add_trace_options(CLI::App& cmd, TraceCliOptions& o) {
    cmd.add_option("--requests", o.options.requests, "requests in the trace")->check(positive())->capture_default_str();
    cmd.add_option("--median", o.options.median_output_tokens, "median output tokens")->check(positive())->capture_default_str();
    cmd.add_option("--max", o.options.max_output_tokens, "largest output")->check(positive())->capture_default_str();
    cmd.add_option("--prompt", o.options.prompt_tokens, "prompt tokens per request")->check(positive())->capture_default_str();
    cmd.add_option("--arrival", o.arrival, "all (at t = 0) or poisson")->capture_default_str();
    cmd.add_option("--rate", o.options.arrivals_per_s, "Poisson arrivals per second")->check(positive())->capture_default_str();
    cmd.add_option("--seed", o.options.seed, "trace seed")->capture_default_str();
}

}  // namespace inferscope::cli
