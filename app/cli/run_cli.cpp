// The CLI's commands and its error handling, callable with an argument vector.
#include "app/cli/run_cli.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"

namespace inferscope::cli {
namespace {

// Output that never reached its destination (a full disk, a closed pipe) is a failure, not
// a success with nothing to show.
void require_output_written() {
    errno = 0;
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
        const int error_number = errno;
        throw Error(std::string("cannot write the standard output: ") +
                    (error_number != 0 ? std::strerror(error_number) : "write error"));
    }
}

}  // namespace

int run_cli(int argc, char** argv) {
    CLI::App app{"InferScope: measure what LLM inference costs, step by step"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "inferscope-cli 0.1.0");
    add_info_command(app);
    add_tokenize_command(app);
    add_detokenize_command(app);
    add_chat_command(app);
    add_chat_template_command(app);
    add_generate_command(app);
    add_logits_command(app);
    add_perplexity_command(app);
    add_make_model_command(app);
    add_convert_llama2c_command(app);
    add_bench_command(app);
    add_batch_bench_command(app);
    add_serve_sim_command(app);
    add_outliers_command(app);
    add_quant_command(app);
    add_quantize_command(app);
    add_eval_command(app);
    add_budget_command(app);
    add_cache_vs_recompute_command(app);
    add_phases_command(app);
    add_kv_command(app);
    add_spec_command(app);
    add_spec_table_command(app);
    add_softlabels_command(app);
    add_devices_command(app);
    add_remote_metrics_command(app);
    add_remote_bench_command(app);
    add_remote_replay_command(app);
    add_serve_command(app);
    require_finite_floats(app);
    try {
        app.parse(argc, argv);
        require_output_written();
    } catch (const CLI::ParseError& e) {
        if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
        std::fprintf(stderr, "error: %s\n(%s --help lists the options)\n", e.what(), argv[0]);
        return 1;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "error: out of memory\n");
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", terminal_safe(e.what(), /*keep_line_breaks=*/true).c_str());
        return 1;
    }
    return 0;
}

}  // namespace inferscope::cli
