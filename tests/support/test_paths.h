#pragma once
// Where the tests find the shared models (../shared/models next to the checkout, or the
// directory named by INFERSCOPE_MODELS_DIR). Tests that need it skip with a printed reason
// when it is absent.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace inferscope::testing {

inline std::filesystem::path shared_models_dir() {
    if (const char* env = std::getenv("INFERSCOPE_MODELS_DIR")) return env;
    return INFERSCOPE_DEFAULT_MODELS_DIR;
}

inline bool shared_models_available() { return std::filesystem::is_directory(shared_models_dir()); }

inline std::filesystem::path shared_model(const std::string& relative) { return shared_models_dir() / relative; }

// The text of llama.cpp's perplexity reference runs (its first 8 KiB); Debian's base-files has it.
inline constexpr const char* kGplTextPath = "/usr/share/common-licenses/GPL-3";

// At most the first `bytes` of the file at `path`; nullopt when it cannot be opened.
inline std::optional<std::string> read_file_prefix(const std::string& path, size_t bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return std::nullopt;
    std::string text(bytes, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    return text;
}

}  // namespace inferscope::testing

// Skips the current test, saying why, when ../shared/models (or one file in it) is missing.
#define INFERSCOPE_REQUIRE_SHARED_FILE(relative)                                                         \
    do {                                                                                                 \
        const auto required_path_ = ::inferscope::testing::shared_model(relative);                       \
        if (!std::filesystem::exists(required_path_)) {                                                  \
            GTEST_SKIP() << "shared test data not found: " << required_path_.string()                    \
                         << " (set INFERSCOPE_MODELS_DIR or place ../shared/models next to the checkout)"; \
        }                                                                                                \
    } while (0)
