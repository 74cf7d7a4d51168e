#pragma once
// Shared by the chat template tests: the data folder, file reading and the fixed clock that
// renderings.json was made with.
#include <ctime>
#include <fstream>
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
