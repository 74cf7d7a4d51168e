#pragma once
// Options and helpers shared by the inferscope-cli subcommands.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "engine/core/progress.h"
#include "engine/model/model.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/serving_sim.h"
#include "engine/runtime/session.h"

namespace inferscope::cli {

struct ModelOptions {
    std::string model_path;  // empty: the built-in synthetic model
    int threads = 0;
    int ctx = 0;
    std::string kv_type = "f16";
    std::string backend = "cpu";  // "cpu" or "vulkan"
    bool kv_full_cache = false;  // sliding-window layers keep every block (the full cache)
    bool json = false;
};

// -m/--model and --json on every command; -t, --kv-type and (unless the command gives -c
// another meaning) -c where a forward runs.
void add_model_options(CLI::App& command, ModelOptions& options, bool with_runtime, bool with_context = true);

// Loads -m, or the built-in synthetic model (saying so on stderr) when -m is absent.
std::shared_ptr<const Model> load_model(const ModelOptions& options);
// The tokenizer of -m alone (any architecture; a vocab-only GGUF is enough), or of the
// built-in model when -m is absent.
std::shared_ptr<const Tokenizer> load_tokenizer(const ModelOptions& options);
SessionOptions session_options(const ModelOptions& options);
// -p/--prompt TEXT, or -f/--file PATH for a prompt too long for the command line (the
// file's whole text becomes the prompt). `required`: one of the two must be given.
void add_prompt_options(CLI::App& command, std::string& prompt, const std::string& description, bool required);
// --temp, --top-k, --top-p, --min-p, --repeat-penalty, --repeat-last-n, -s/--seed.
void add_sampling_options(CLI::App& command, SamplingParams& sampling);
// The backend --backend names for `model`: null for the CPU (the session's default), the
// Vulkan backend when this build has one, else UnsupportedError. `op_timestamps`: per-op
// GPU times in step events (commands that do not show them pass false: they cost speed).
std::unique_ptr<Backend> make_backend(const ModelOptions& options, const std::shared_ptr<const Model>& model,
                                      bool op_timestamps = true);
// Runs the session's warm-up (a GPU's kernels compiled: InferenceSession::warm_up, with its
// `most_logit_rows`) so that the command's timings are those of inference alone, and says on
// stderr how long it took. Returns its milliseconds; 0 where the backend has none (the CPU).
double warm_up(InferenceSession& session, int most_logit_rows = 0);
// The read bandwidth, in bytes/s, of the device the Vulkan backend make_backend made runs on;
// 0 when the device cannot time it.
double device_read_bandwidth(Backend& backend);

// Tokenizes a prompt as llama.cpp's tools do: special tokens parsed, BOS as the vocabulary says.
std::vector<TokenId> tokenize_prompt(const Model& model, const std::string& text, bool add_special = true);

void print_json(const nlohmann::json& value);

// Text from a file (a model's name, tensor names, a message quoting them) as the terminal
// may show it: C0 and C1 control characters become \xNN / \u00NN, so an escape sequence in
// general.name cannot reach the terminal. Line breaks and tabs are kept when asked.
std::string terminal_safe(std::string_view text, bool keep_line_breaks = false);

// Generated text streamed piece by piece to the standard output: on a terminal each piece goes
// through terminal_safe (line breaks kept), holding back a trailing 0xC2 so a C1 character
// split across two pieces is still caught; into a file or pipe the text passes unchanged.
class TerminalTextStream {
public:
    TerminalTextStream();
    void write(std::string_view piece);
    void flush();  // writes a held-back byte

private:
    bool terminal_;
    std::string held_;
};

// Progress lines on stderr, "LABEL: STAGE DONE/TOTAL ITEM": one line rewritten on a
// terminal; in a log, a line when the stage changes, at every tenth and at the end.
Progress stderr_progress(const std::string& label);

// Texts for perplexity, prompts, templates and messages; beyond this a run would take hours.
inline constexpr uint64_t kMaxTextFileBytes = uint64_t{256} << 20;

// The whole regular file at `path` (at most kMaxTextFileBytes); Error naming it otherwise.
std::string read_text_file(const std::string& path);

// An API key from the environment variable the user named (never from the command line, where
// other users of the machine could read it); "" when no variable is named, InvalidArgument
// when it is unset or empty.
std::string api_key_from_env(const std::string& variable);

// The request-trace options of serve-sim and remote-replay (--requests, --median, --max,
// --prompt, --arrival, --rate, --seed); trace() applies --arrival.
struct TraceCliOptions {
    TraceOptions options;
    std::string arrival = "all";
    TraceOptions trace() const;  // InvalidArgument for an --arrival that is not all or poisson
};
void add_trace_options(CLI::App& cmd, TraceCliOptions& o);

// Each subcommand registers itself on the application.
void add_info_command(CLI::App& app);
void add_tokenize_command(CLI::App& app);
void add_detokenize_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_logits_command(CLI::App& app);
void add_perplexity_command(CLI::App& app);
void add_make_model_command(CLI::App& app);
void add_convert_llama2c_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_batch_bench_command(CLI::App& app);
void add_serve_sim_command(CLI::App& app);
void add_outliers_command(CLI::App& app);
void add_quant_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_budget_command(CLI::App& app);
void add_cache_vs_recompute_command(CLI::App& app);
void add_phases_command(CLI::App& app);
void add_kv_command(CLI::App& app);
void add_spec_command(CLI::App& app);
void add_spec_table_command(CLI::App& app);
void add_softlabels_command(CLI::App& app);
void add_devices_command(CLI::App& app);
void add_remote_metrics_command(CLI::App& app);
void add_remote_bench_command(CLI::App& app);
void add_remote_replay_command(CLI::App& app);
void add_serve_command(CLI::App& app);

}  // namespace inferscope::cli
