#pragma once
// Shared by the chat template tests: the data folder, file reading, the engine's feature cases
// and the fixed clock that renderings.json was made with.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/chat/chat_template.h"
#include "support/test_paths.h"

namespace inferscope::testing {

inline constexpr const char* kChatTemplatesDir = "chat-templates";

inline std::string read_text_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

// Templates exercising one feature each (jinja_unit_cases.json beside this file): a list of
// {name, template, variables, expected}, the expected text as Python jinja2 3.1 renders it
// with transformers' settings (tests/chat/jinja2_oracle.py). The unit test compares our
// engine with these texts; the live-oracle test checks them against jinja2 again.
inline nlohmann::ordered_json jinja_unit_cases() {
    return nlohmann::ordered_json::parse(read_text_file(std::filesystem::path(__FILE__).parent_path() / "jinja_unit_cases.json"));
}

// 3 Dec 2026, the date renderings.json fixes strftime_now to.
inline std::tm oracle_date() {
    std::tm t{};
    t.tm_year = 2026 - 1900;
    t.tm_mon = 11;
    t.tm_mday = 3;
    t.tm_hour = 12;
    t.tm_wday = 4;  // a Thursday
    t.tm_yday = 336;
    return t;
}

}  // namespace inferscope::testing
