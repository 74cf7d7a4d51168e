#pragma once
// Everything inferscope-cli does, as a function: the fuzz harness for argument vectors calls it
// as main() does.

namespace inferscope::cli {

// Parses argv, runs the chosen command and returns the exit status: 0 on success (and for
// --help, --version), 1 with "error: ..." on standard error for any failure.
int run_cli(int argc, char** argv);

}  // namespace inferscope::cli
