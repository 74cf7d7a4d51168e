#include "app/cli/cli_checks.h"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>

namespace inferscope::cli {
namespace {

std::optional<double> parse_number(const std::string& text) {
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size()) return std::nullopt;
    return value;
}

std::string shown(double bound) {
    std::string text = std::to_string(bound);
    text.erase(text.find_last_not_of('0') + 1);
    if (text.back() == '.') text.pop_back();
    return text;
}

CLI::Validator number_check(const std::string& name, const std::function<std::string(double)>& problem) {
    return CLI::Validator(
        [problem](std::string& text) -> std::string {
            const std::optional<double> value = parse_number(text);
            if (!value) return text + " is not a number";
            if (!std::isfinite(*value)) return text + " is not a finite number";
            return problem(*value);
        },
        name);
}

}  // namespace

CLI::Validator non_negative() {
    return number_check("NONNEGATIVE", [](double v) { return v >= 0 ? std::string() : shown(v) + " is negative; must be >= 0"; });
}

CLI::Validator positive() {
    return number_check("POSITIVE", [](double v) { return v > 0 ? std::string() : shown(v) + " must be > 0"; });
}

CLI::Validator within(double lo, double hi) {
    const std::string range = "[" + shown(lo) + ", " + shown(hi) + "]";
    return number_check(range, [lo, hi, range](double v) {
        return v >= lo && v <= hi ? std::string() : shown(v) + " is outside " + range;
    });
}

void require_finite_floats(CLI::App& app) {
    for (CLI::Option* option : app.get_options()) {
        if (option->get_type_name().rfind("FLOAT", 0) != 0) continue;
        option->check(CLI::Validator(
            [](std::string& text) -> std::string {
                const std::optional<double> value = parse_number(text);
                return value && !std::isfinite(*value) ? text + " is not a finite number" : std::string();
            },
            ""));
    }
    for (CLI::App* command : app.get_subcommands({})) require_finite_floats(*command);
}

}  // namespace inferscope::cli
