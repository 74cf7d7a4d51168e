// libFuzzer entry point for inferscope-cli's argument vectors: each input is one command line,
// an argument per line, run through the same run_cli() as the executable, in a scratch folder
// holding a tiny model (m.gguf), a prompt file (p.txt), a chat template (t.jinja) and a
// messages file (msgs.json), restored after every input. Any outcome but a sanitizer report,
// an abort or an escaped exception is fine: a hostile argument must end in "error: ..." and
// exit status 1.
//
// Inputs the harness skips, so that an input stays well under a minute of work and never
// touches anything outside the scratch folder (the size limits above these are covered by
// tests/cli): a path separator or ".." in any argument, a leading '.', a number of three or
// more digits, in exponent form or with a hex prefix, numbers adding up to more than 300
// (lists such as -p 99,99,99 multiply the work), more than 2 commas in an argument, an
// argument naming a full-size make-model preset (hundreds of MB per input), more than 24
// arguments, `bench` without --membw-gbs (its bandwidth probe reads a GiB for seconds), and
// `serve` (it serves until a signal; tests/serve drive it over loopback).
// A remote command's URL needs "//", so the path rule keeps every input off the network.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/run_cli.h"
#include "engine/synth/synthetic_model.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxArguments = 24;
constexpr size_t kMaxArgumentBytes = 200;
constexpr int kMaxNumberSum = 300;
constexpr size_t kMaxCommas = 2;

// The scratch folder's own files and their contents, put back after each input.
std::map<std::string, std::string>& seeded_files() {
    static std::map<std::string, std::string> files;
    return files;
}

int run(std::vector<std::string> args) {
    args.insert(args.begin(), "inferscope-cli");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    return inferscope::cli::run_cli(static_cast<int>(args.size()), argv.data());
}

void write_file(const char* name, std::string_view text) {
    FILE* f = std::fopen(name, "wb");
    if (f == nullptr || std::fwrite(text.data(), 1, text.size(), f) != text.size() || std::fclose(f) != 0) {
        std::fprintf(stderr, "fuzz_cli_args: cannot write %s in the scratch folder\n", name);
        std::abort();
    }
}

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// Whether `arg` is within the limits above; adds its numbers to `number_sum`.
bool acceptable(std::string_view arg, int& number_sum) {
    if (arg.size() > kMaxArgumentBytes || arg.find('/') != std::string_view::npos ||
        arg.find("..") != std::string_view::npos || arg.find('\0') != std::string_view::npos) {
        return false;
    }
    if (!arg.empty() && arg[0] == '.') return false;
    if (static_cast<size_t>(std::count(arg.begin(), arg.end(), ',')) > kMaxCommas) return false;
    int digits = 0, value = 0;
    for (size_t i = 0; i < arg.size(); ++i) {
        if (is_digit(arg[i])) {
            value = 10 * value + (arg[i] - '0');
            if (++digits >= 3) return false;
            continue;
        }
        if (digits > 0) {
            const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(arg[i])));
            const bool exponent = c == 'e' && i + 1 < arg.size() && (is_digit(arg[i + 1]) || arg[i + 1] == '+' || arg[i + 1] == '-');
            const bool hex = c == 'x' && digits == 1 && value == 0;
            if (exponent || hex) return false;
            number_sum += value;
        }
        digits = 0;
        value = 0;
    }
    number_sum += value;
    if (number_sum > kMaxNumberSum) return false;
    for (const std::string_view preset : inferscope::synthetic_preset_names()) {
        if (preset != "default" && !preset.starts_with("tiny") && arg.find(preset) != std::string_view::npos) return false;
    }
    return true;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Everything a command wrote is removed and the seeded files put back as they were, so that
// inputs do not see each other's files and a saved input reproduces on its own.
void restore_scratch_folder() {
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::current_path())) {
        if (seeded_files().count(entry.path().filename().string()) == 0) {
            std::error_code ignored;
            fs::remove_all(entry.path(), ignored);
        }
    }
    for (const auto& [name, bytes] : seeded_files()) {
        std::error_code ignored;
        if (!fs::is_regular_file(name, ignored) || fs::file_size(name, ignored) != bytes.size() || read_file(name) != bytes) {
            fs::remove_all(name, ignored);
            write_file(name.c_str(), bytes);
        }
    }
}

std::string& scratch_folder() {
    static std::string path;
    return path;
}

void remove_scratch_folder() {
    std::error_code ignored;
    fs::remove_all(scratch_folder(), ignored);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string scratch = (fs::temp_directory_path() / "fuzz_cli_args.XXXXXX").string();
    if (mkdtemp(scratch.data()) == nullptr || chdir(scratch.c_str()) != 0) {
        std::perror("fuzz_cli_args: scratch folder");
        std::abort();
    }
    scratch_folder() = scratch;
    std::atexit(remove_scratch_folder);
    // Commands print their results; the interactive `chat` reads its turns from standard input.
    if (std::freopen("/dev/null", "w", stdout) == nullptr || std::freopen("/dev/null", "r", stdin) == nullptr) {
        std::perror("fuzz_cli_args: /dev/null");
        std::abort();
    }
    if (run({"make-model", "--preset", "tiny-qwen2", "-o", "m.gguf"}) != 0) {
        std::fprintf(stderr, "fuzz_cli_args: cannot write the tiny model\n");
        std::abort();
    }
    write_file("p.txt", "Once upon a time there was a little cat. It liked to play in the sun.\n");
    write_file("t.jinja",
               "{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}\n{% endfor %}"
               "{% if add_generation_prompt %}<|assistant|>{% endif %}");
    write_file("msgs.json", R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])");
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::current_path())) {
        seeded_files()[entry.path().filename().string()] = read_file(entry.path());
    }
    std::fprintf(stderr, "fuzz_cli_args: scratch folder %s\n", scratch.c_str());
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> args;
    int number_sum = 0;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view arg = text.substr(start, end - start);
        if (!acceptable(arg, number_sum) || args.size() == kMaxArguments) return -1;
        args.emplace_back(arg);
        start = end + 1;
    }
    const auto sets_bandwidth = [](const std::string& a) { return a.starts_with("--membw-gbs"); };
    if (!args.empty() && args[0] == "bench" && std::none_of(args.begin(), args.end(), sets_bandwidth)) return -1;
    if (!args.empty() && args[0] == "serve") return -1;
    run(args);
    restore_scratch_folder();
    return 0;
}
