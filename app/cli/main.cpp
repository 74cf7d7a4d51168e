// inferscope-cli: the engine's command-line front end.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <new>

#include "app/cli/cli_checks.h"
#include "app/cli/cli_common.h"
#include "engine/core/error.h"

namespace {

// Output that never reached its destination (a full disk, a closed pipe) is a failure, not
// a success with nothing to show.
void require_output_written() {
    errno = 0;
    std::cout.flush();
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout) {
        const int error_number = errno;
        throw inferscope::Error(std::string("cannot write the standard output: ") +
                                (error_number != 0 ? std::strerror(error_number) : "write error"));
    }
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"InferScope: measure what LLM inference costs, step by step"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "inferscope-cli 0.1.0");
    inferscope::cli::add_info_command(app);
    inferscope::cli::add_tokenize_command(app);
    inferscope::cli::add_detokenize_command(app);
    inferscope::cli::add_chat_command(app);
    inferscope::cli::add_chat_template_command(app);
    inferscope::cli::add_generate_command(app);
    inferscope::cli::add_logits_command(app);
    inferscope::cli::add_perplexity_command(app);
    inferscope::cli::add_make_model_command(app);
    inferscope::cli::add_bench_command(app);
    inferscope::cli::add_batch_bench_command(app);
    inferscope::cli::add_serve_sim_command(app);
    inferscope::cli::add_outliers_command(app);
    inferscope::cli::add_quant_command(app);
    inferscope::cli::add_quantize_command(app);
    inferscope::cli::add_eval_command(app);
    inferscope::cli::add_budget_command(app);
    inferscope::cli::add_cache_vs_recompute_command(app);
    inferscope::cli::add_phases_command(app);
    inferscope::cli::add_kv_command(app);
    inferscope::cli::add_spec_command(app);
    inferscope::cli::add_spec_table_command(app);
    inferscope::cli::add_softlabels_command(app);
    inferscope::cli::add_devices_command(app);
    inferscope::cli::require_finite_floats(app);
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
        std::fprintf(stderr, "error: %s\n", inferscope::cli::terminal_safe(e.what(), /*keep_line_breaks=*/true).c_str());
        return 1;
    }
    return 0;
}
