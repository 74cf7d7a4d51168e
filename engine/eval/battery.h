#pragma once
// A question battery: prompts with accepted answers, scored under greedy decoding.
//
// File format (UTF-8 text, one directive per line):
//   # ...                 a comment (also blank lines)
//   max_tokens: <n>       tokens generated per prompt (default 16; once, before the items)
//   Q: <prompt>           starts an item; "\n" in the prompt stands for a newline
//   A: <answer> | <answer> | ...   the accepted answers of the item just opened (required)
// Leading and trailing spaces of prompts and answers are dropped. An item passes when the
// generated text contains one of its answers, compared case-insensitively (ASCII) and as a
// whole word or phrase: the characters around the match are not letters or digits.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tokenizer/tokenizer.h"

namespace inferscope {

class InferenceSession;

struct BatteryItem {
    std::string prompt;
    std::vector<std::string> answers;
    int line = 0;  // of the Q: line, for messages
};

struct Battery {
    std::string source;  // file name, for messages
    int max_tokens = 16;
    std::vector<BatteryItem> items;
};

// InvalidArgument naming the source and line for malformed text (an A: without a Q:, a Q:
// without answers, an unknown directive, no items at all).
Battery parse_battery(std::string_view text, const std::string& source);
// A battery is a hand-written list of questions; a file past this is not one.
inline constexpr uint64_t kMaxBatteryFileBytes = uint64_t{16} << 20;

Battery load_battery(const std::string& path);  // Error when the file cannot be read

bool answer_matches(std::string_view generated, std::span<const std::string> answers);

struct BatteryItemResult {
    std::string generated;
    bool passed = false;
};

struct BatteryResult {
    float repeat_penalty = 1.0f;
    int passed = 0;
    int total = 0;
    std::vector<BatteryItemResult> items;
};

// Greedy decoding of every prompt (prompt tokenized with special tokens parsed and BOS as
// the vocabulary says), stopping at end of generation or max_tokens; `repeat_penalty` 1
// turns the penalty off (llama.cpp's penalty over the last `repeat_last_n` tokens).
BatteryResult run_battery(InferenceSession& session, const Battery& battery, float repeat_penalty,
                          int repeat_last_n = 64);

}  // namespace inferscope
