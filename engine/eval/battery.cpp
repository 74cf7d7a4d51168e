#include "engine/eval/battery.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <optional>

#include "engine/core/error.h"
#include "engine/core/regular_file.h"
#include "engine/model/model.h"
#include "engine/runtime/generator.h"
#include "engine/runtime/session.h"

namespace inferscope {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

std::string unescape_newlines(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
            out.push_back('\n');
            ++i;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

std::vector<std::string> split_answers(std::string_view s) {
    std::vector<std::string> answers;
    size_t start = 0;
    while (start <= s.size()) {
        const size_t bar = s.find('|', start);
        const std::string_view answer = trim(s.substr(start, bar == std::string_view::npos ? std::string_view::npos : bar - start));
        if (!answer.empty()) answers.emplace_back(answer);
        if (bar == std::string_view::npos) break;
        start = bar + 1;
    }
    return answers;
}

std::string lower_ascii(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool is_word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

class BatteryParser {
public:
    explicit BatteryParser(const std::string& source) { battery_.source = source; }

    void line(std::string_view raw, int number) {
        const std::string_view text = trim(raw);
        if (text.empty() || text.front() == '#') return;
        if (text.starts_with("Q:")) {
            finish_item();
            open_ = BatteryItem{unescape_newlines(trim(text.substr(2))), {}, number};
            if (open_->prompt.empty()) fail(number, "empty prompt");
        } else if (text.starts_with("A:")) {
            if (!open_) fail(number, "an A: line must follow a Q: line");
            if (!open_->answers.empty()) fail(number, "a second A: line for the same Q:");
            open_->answers = split_answers(text.substr(2));
            if (open_->answers.empty()) fail(number, "no answers after A:");
        } else if (text.starts_with("max_tokens:")) {
            if (open_ || !battery_.items.empty()) fail(number, "max_tokens must come before the first Q:");
            battery_.max_tokens = parse_max_tokens(trim(text.substr(11)), number);
        } else {
            fail(number, "expected Q:, A:, max_tokens: or a # comment, got \"" + std::string(text.substr(0, 40)) + "\"");
        }
    }

    Battery finish(int last_line) {
        finish_item();
        if (battery_.items.empty()) fail(last_line, "the battery has no items");
        return std::move(battery_);
    }

private:
    [[noreturn]] void fail(int number, const std::string& problem) const {
        throw InvalidArgument(battery_.source + ":" + std::to_string(number) + ": " + problem);
    }

    int parse_max_tokens(std::string_view digits, int number) const {
        int value = 0;
        const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
        if (error != std::errc() || end != digits.data() + digits.size() || value < 1 || value > 4096) {
            fail(number, "max_tokens must be an integer from 1 to 4096");
        }
        return value;
    }

    void finish_item() {
        if (!open_) return;
        if (open_->answers.empty()) fail(open_->line, "the Q: has no A: line");
        battery_.items.push_back(std::move(*open_));
        open_.reset();
    }

    Battery battery_;
    std::optional<BatteryItem> open_;
};

}  // namespace

Battery parse_battery(std::string_view text, const std::string& source) {
    BatteryParser parser(source);
    int number = 0;
    size_t start = 0;
    while (start < text.size()) {
        const size_t newline = text.find('\n', start);
        const size_t end = newline == std::string_view::npos ? text.size() : newline;
        parser.line(text.substr(start, end - start), ++number);
        start = end + 1;
    }
    return parser.finish(number);
}

Battery load_battery(const std::string& path) {
    return parse_battery(read_regular_file(path, "a battery file", kMaxBatteryFileBytes), path);
}

bool answer_matches(std::string_view generated, std::span<const std::string> answers) {
    const std::string haystack = lower_ascii(generated);
    for (const std::string& answer : answers) {
        const std::string needle = lower_ascii(answer);
        if (needle.empty()) continue;
        for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) {
            const bool starts_word = at == 0 || !is_word_char(haystack[at - 1]);
            const size_t after = at + needle.size();
            const bool ends_word = after == haystack.size() || !is_word_char(haystack[after]);
            if (starts_word && ends_word) return true;
        }
    }
    return false;
}

BatteryResult run_battery(InferenceSession& session, const Battery& battery, float repeat_penalty, int repeat_last_n) {
    GenerationOptions options;
    options.n_predict = battery.max_tokens;
    options.sampling.temperature = 0.0f;
    options.sampling.repeat_penalty = repeat_penalty;
    options.sampling.repeat_last_n = repeat_last_n;
    options.stop_at_end_of_generation = true;
    const Tokenizer& tokenizer = session.model().tokenizer();
    BatteryResult result;
    result.repeat_penalty = repeat_penalty;
    for (const BatteryItem& item : battery.items) {
        const std::vector<TokenId> prompt = tokenizer.encode(item.prompt, /*add_special=*/true, /*parse_special=*/true);
        const GenerationResult generated = generate(session, prompt, options);
        BatteryItemResult r;
        r.generated = tokenizer.decode(generated.generated);
        r.passed = answer_matches(r.generated, item.answers);
        result.passed += r.passed ? 1 : 0;
        result.items.push_back(std::move(r));
    }
    result.total = static_cast<int>(battery.items.size());
    return result;
}

}  // namespace inferscope
