#pragma once
// Runs the built inferscope-cli (INFERSCOPE_CLI_PATH, or the program INFERSCOPE_CLI names: the
// tests run from a bundle on another machine, scripts/gpu-bundle) with a shell argument string
// and captures its exit code, stdout and stderr, for end-to-end tests of the commands.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace inferscope::testing {

struct CliRunResult {
    int exit_code = -1;
    std::string out;  // stdout
    std::string err;  // stderr
};

// Runs a shell command line (program, arguments, any redirections of stdout) with stderr
// captured.
inline CliRunResult run_command(const std::string& command_line) {
    namespace fs = std::filesystem;
    static int counter = 0;
    const fs::path err_file = fs::temp_directory_path() / ("inferscope-cli-test-" + std::to_string(::getpid()) + "-" +
                                                           std::to_string(counter++) + ".err");
    const std::string command = command_line + " 2>" + err_file.string();
    CliRunResult r;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return r;
    std::array<char, 4096> buffer{};
    size_t n = 0;
    while ((n = std::fread(buffer.data(), 1, buffer.size(), pipe)) > 0) r.out.append(buffer.data(), n);
    const int status = ::pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    std::ifstream err(err_file);
    r.err.assign(std::istreambuf_iterator<char>(err), {});
    err.close();
    fs::remove(err_file);
    return r;
}

inline std::string cli_path() {
    const char* env = std::getenv("INFERSCOPE_CLI");
    return env != nullptr && *env != '\0' ? env : INFERSCOPE_CLI_PATH;
}

inline CliRunResult run_cli(const std::string& args) { return run_command(cli_path() + " " + args); }

}  // namespace inferscope::testing
