// libFuzzer entry point for inferscope-cli's argument vectors: each input is one command line,
// an argument per line, run through the same run_cli() as the executable, in a scratch folder
// holding a tiny model (m.gguf), a prompt file (p.txt), a chat template (t.jinja) and a
// messages file (msgs.json). Any
// outcome but a sanitizer report, an abort or an escaped exception is fine: a hostile argument
// must end in "error: ..." and exit status 1.
//
// Inputs the harness skips, so that an input stays a few milliseconds of work and never
// touches anything outside the scratch folder (the size limits above these are covered by
// tests/cli): a path separator or a leading '.' in any argument, a number of three or more
// digits or with an exponent or hex prefix, an argument naming a full-size make-model preset
// (hundreds of MB per input), more than 24 arguments, and `bench` without --membw-gbs (its
// bandwidth probe reads a GiB for seconds).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "app/cli/run_cli.h"
#include "engine/synth/synthetic_model.h"

namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxArguments = 24;
constexpr size_t kMaxArgumentBytes = 200;

std::set<std::string>& seeded_files() {
    static std::set<std::string> names;
    return names;
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

bool acceptable(std::string_view arg) {
    if (arg.size() > kMaxArgumentBytes || arg.find('/') != std::string_view::npos || arg.find('\0') != std::string_view::npos) {
        return false;
    }
    if (!arg.empty() && arg[0] == '.') return false;
    size_t digits = 0;
    for (size_t i = 0; i < arg.size(); ++i) {
        const bool digit = std::isdigit(static_cast<unsigned char>(arg[i])) != 0;
        digits = digit ? digits + 1 : 0;
        if (digits >= 3) return false;
        if (i > 0 && std::isdigit(static_cast<unsigned char>(arg[i - 1])) != 0) {
            const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(arg[i])));
            if (c == 'e' || c == 'x') return false;
        }
    }
    for (const std::string_view preset : inferscope::synthetic_preset_names()) {
        if (preset != "default" && !preset.starts_with("tiny") && arg.find(preset) != std::string_view::npos) return false;
    }
    return true;
}

// Everything a command wrote is removed, so that inputs do not see each other's files.
void remove_written_files() {
    for (const fs::directory_entry& entry : fs::directory_iterator(fs::current_path())) {
        if (seeded_files().count(entry.path().filename().string()) == 0) {
            std::error_code ignored;
            fs::remove_all(entry.path(), ignored);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    char scratch[] = "/tmp/fuzz_cli_args.XXXXXX";
    if (mkdtemp(scratch) == nullptr || chdir(scratch) != 0) {
        std::perror("fuzz_cli_args: scratch folder");
        std::abort();
    }
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
        seeded_files().insert(entry.path().filename().string());
    }
    std::fprintf(stderr, "fuzz_cli_args: scratch folder %s\n", scratch);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> args;
    size_t start = 0;
    while (start <= text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view arg = text.substr(start, end - start);
        if (!acceptable(arg) || args.size() == kMaxArguments) return -1;
        args.emplace_back(arg);
        start = end + 1;
    }
    const auto sets_bandwidth = [](const std::string& a) { return a.starts_with("--membw-gbs"); };
    if (!args.empty() && args[0] == "bench" && std::none_of(args.begin(), args.end(), sets_bandwidth)) return -1;
    run(args);
    remove_written_files();
    return 0;
}
