// jinja2's built-in filters that chat templates use, plus tojson as transformers defines it.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

using FilterFunction = std::function<Value(const Value&, const CallArgs&)>;

const Value* argument(const CallArgs& args, size_t position, const char* name) {
    const Value* v = args.get(position, name);
    return (v == nullptr || v->is_undefined()) ? nullptr : v;
}

bool flag_argument(const CallArgs& args, size_t position, const char* name) {
    const Value* v = argument(args, position, name);
    return v != nullptr && v->truthy();
}

std::string ascii_case(std::string text, bool upper) {
    for (char& c : text) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// Python's str.title(): a letter after a non-letter is upper case, every other letter lower.
std::string python_title(const std::string& s) {
    std::string out = s;
    bool previous_cased = false;
    for (char& c : out) {
        const auto u = static_cast<unsigned char>(c);
        c = static_cast<char>(previous_cased ? std::tolower(u) : std::toupper(u));
        previous_cased = std::isalpha(u) != 0;
    }
    return out;
}

// jinja2's title filter: words begin after whitespace, '-', '(', '{', '[' or '<'.
std::string jinja_title(const std::string& s) {
    std::string out = s;
    bool word_start = true;
    for (char& c : out) {
        const auto u = static_cast<unsigned char>(c);
        c = static_cast<char>(word_start ? std::toupper(u) : std::tolower(u));
        word_start = std::isspace(u) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    }
    return out;
}

std::string capitalize(const std::string& s) {
    std::string out = ascii_case(s, false);
    if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    return out;
}

std::string html_escape(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&#34;"; break;
            case '\'': out += "&#39;"; break;
            default: out += c;
        }
    }
    return out;
}

// An attribute path such as "function.name", looked up item-first as jinja2's attrgetter does.
Value attribute_path(const Value& item, const std::string& path, int line) {
    Value current = item;
    size_t start = 0;
    while (true) {
        const size_t dot = path.find('.', start);
        const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
        const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
        // A number past int64 indexes nothing, so it is looked up (and missed) as a name.
        const std::optional<int64_t> index = numeric ? parse_decimal_int64(part) : std::nullopt;
        current = index ? get_item(current, Value(*index), line) : get_item(current, Value(part), line);
        if (dot == std::string::npos) return current;
        start = dot + 1;
    }
}

const std::string& attribute_argument(const CallArgs& args, size_t position, const char* filter) {
    const Value* v = argument(args, position, "attribute");
    if (v == nullptr || !v->is_string()) throw TemplateError(std::string(filter) + ": needs an attribute name", args.line);
    return v->as_string();
}

// The rest of the arguments after `skip` positional ones, for a test or filter named by string.
CallArgs remaining_arguments(const CallArgs& args, size_t skip) {
    CallArgs rest{{}, {}, args.line};
    for (size_t i = skip; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
    return rest;
}

// select / reject / selectattr / rejectattr.
Value select_items(const Value& subject, const CallArgs& args, bool by_attribute, bool keep_when) {
    const size_t test_position = by_attribute ? 1 : 0;
    const Value* test = argument(args, test_position, "test");
    const std::string* attr = by_attribute ? &attribute_argument(args, 0, "selectattr") : nullptr;
    const CallArgs test_args = remaining_arguments(args, test_position + 1);
    ValueList out;
    for (const Value& item : iterate(subject, args.line)) {
        const Value tested = attr ? attribute_path(item, *attr, args.line) : item;
        bool passes = false;
        if (test == nullptr) passes = tested.truthy();
        else if (test->is_string()) passes = apply_test(test->as_string(), tested, test_args);
        else throw TemplateError("select: the test must be named by a string", args.line);
        if (passes == keep_when) out.push_back(item);
    }
    return Value(std::move(out));
}

Value map_items(const Value& subject, const CallArgs& args) {
    ValueList out;
    const Value* attribute = nullptr;
    for (const auto& [key, value] : args.named) {
        if (key == "attribute") attribute = &value;
    }
    for (const Value& item : iterate(subject, args.line)) {
        if (attribute != nullptr) {
            Value v = attribute_path(item, attribute->str(), args.line);
            const Value* fallback = nullptr;
            for (const auto& [key, value] : args.named) {
                if (key == "default") fallback = &value;
            }
            out.push_back(v.is_undefined() && fallback ? *fallback : v);
        } else {
            if (args.positional.empty() || !args.positional[0].is_string()) throw TemplateError("map: needs a filter name or attribute=", args.line);
            out.push_back(apply_filter(args.positional[0].as_string(), item, remaining_arguments(args, 1)));
        }
    }
    return Value(std::move(out));
}

// The key sort and unique compare by: an attribute, and strings lower-cased unless case_sensitive.
Value comparison_key(const Value& item, const CallArgs& args, size_t case_position, const std::string* attribute) {
    Value key = attribute ? attribute_path(item, *attribute, args.line) : item;
    if (key.is_string() && !flag_argument(args, case_position, "case_sensitive")) key = Value(ascii_case(key.as_string(), false));
    return key;
}

Value sort_items(const Value& subject, const CallArgs& args) {
    const Value* attr = argument(args, 2, "attribute");
    const std::string attribute = attr ? attr->str() : "";
    ValueList items = iterate(subject, args.line);
    std::vector<std::pair<Value, Value>> keyed;
    for (const Value& item : items) keyed.emplace_back(comparison_key(item, args, 1, attr ? &attribute : nullptr), item);
    const bool reverse = flag_argument(args, 0, "reverse");
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return reverse ? less_than(b.first, a.first, args.line) : less_than(a.first, b.first, args.line);
    });
    ValueList out;
    for (auto& entry : keyed) out.push_back(std::move(entry.second));
    return Value(std::move(out));
}

Value unique_items(const Value& subject, const CallArgs& args) {
    const Value* attr = argument(args, 1, "attribute");
    const std::string attribute = attr ? attr->str() : "";
    ValueList seen, out;
    for (const Value& item : iterate(subject, args.line)) {
        const Value key = comparison_key(item, args, 0, attr ? &attribute : nullptr);
        if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return s.equals(key); })) continue;
        seen.push_back(key);
        out.push_back(item);
    }
    return Value(std::move(out));
}

Value length_of(const Value& v, const CallArgs& args) {
    switch (v.kind()) {
        case Value::Kind::String: return Value(static_cast<int64_t>(utf8_characters(v.as_string()).size()));
        case Value::Kind::List: return Value(static_cast<int64_t>(v.as_list().size()));
        case Value::Kind::Dict: return Value(static_cast<int64_t>(v.as_dict().size()));
        case Value::Kind::Undefined: return Value(int64_t{0});
        default: throw TemplateError("object of type '" + v.type_name() + "' has no len()", args.line);
    }
}

Value join_items(const Value& subject, const CallArgs& args) {
    const Value* separator = argument(args, 0, "d");
    const Value* attr = argument(args, 1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(subject, args.line)) {
        if (!first && separator) out += separator->str();
        out += (attr ? attribute_path(item, attr->str(), args.line) : item).str();
        check_template_string_size(out.size(), args.line);
        first = false;
    }
    return Value(std::move(out));
}

// Python's round(x, n), which rounds the exact binary value half to even; printf does the same.
Value round_number(const Value& v, const CallArgs& args) {
    if (!v.is_number()) throw TemplateError("round: needs a number", args.line);
    const Value* precision_value = argument(args, 0, "precision");
    // Past 400 digits either way a double is kept or rounds to 0, so the precision is clamped
    // there and printf never builds more digits than that.
    const int precision = precision_value ? static_cast<int>(std::clamp<int64_t>(precision_value->as_int(), -400, 400)) : 0;
    const Value* method_value = argument(args, 1, "method");
    const std::string method = method_value ? method_value->str() : "common";
    // 10**precision is 0 as a double below -308: every value rounds to a zero of its sign.
    if (precision < -308) return Value(std::copysign(0.0, v.as_double()));
    const double scale = std::pow(10.0, precision);
    if (method == "ceil") return Value(std::ceil(v.as_double() * scale) / scale);
    if (method == "floor") return Value(std::floor(v.as_double() * scale) / scale);
    if (method != "common") throw TemplateError("round: method must be common, ceil or floor", args.line);
    char text[512];
    std::snprintf(text, sizeof text, "%.*f", std::max(precision, 0), v.as_double());
    return Value(precision >= 0 ? std::strtod(text, nullptr) : std::nearbyint(v.as_double() * scale) / scale);
}

// int() of a finite float: truncated toward zero, as Python's; past int64 an error (Python's
// integers would hold it).
Value truncated_int(double value, int line) {
    constexpr double kTwoTo63 = 9223372036854775808.0;
    const double truncated = std::trunc(value);
    if (truncated >= kTwoTo63 || truncated < -kTwoTo63) {
        throw TemplateError("integer overflow: int(" + python_float_repr(value) + ") does not fit in 64 bits", line);
    }
    return Value(static_cast<int64_t>(truncated));
}

Value int_of(const Value& v, const CallArgs& args) {
    const Value* fallback = argument(args, 0, "default");
    const Value otherwise = fallback ? *fallback : Value(int64_t{0});
    if (v.is_integer()) return Value(v.as_int());
    if (v.kind() == Value::Kind::Float) return std::isfinite(v.as_double()) ? truncated_int(v.as_double(), args.line) : otherwise;
    if (!v.is_string()) return otherwise;
    const std::string text = strip_chars(v.as_string(), nullptr, true, true);
    try {
        size_t used = 0;
        const int64_t parsed = std::stoll(text, &used, 10);
        if (used == text.size()) return Value(parsed);
        const double d = std::stod(text, &used);
        if (used == text.size() && std::isfinite(d)) return truncated_int(d, args.line);
    } catch (const std::invalid_argument&) {
    } catch (const std::out_of_range&) {
    }
    return otherwise;
}

Value float_of(const Value& v, const CallArgs& args) {
    const Value* fallback = argument(args, 0, "default");
    const Value otherwise = fallback ? *fallback : Value(0.0);
    if (v.is_number()) return Value(v.as_double());
    if (!v.is_string()) return otherwise;
    const std::string text = strip_chars(v.as_string(), nullptr, true, true);
    try {
        size_t used = 0;
        const double d = std::stod(text, &used);
        if (used == text.size()) return Value(d);
    } catch (const std::exception&) {
    }
    return otherwise;
}

// Indentation wider than this is refused: a template's numbers come from a model file.
constexpr int64_t kMaxIndent = 4096;

int64_t checked_indent(const Value& width, const char* filter, int line) {
    const int64_t value = width.as_int();
    if (value > kMaxIndent) {
        throw TemplateError(std::string(filter) + ": indent " + std::to_string(value) + " is wider than " +
                                std::to_string(kMaxIndent),
                            line);
    }
    return value;
}

Value indent_text(const Value& v, const CallArgs& args) {
    const Value* width = argument(args, 0, "width");
    if (width != nullptr && !width->is_string()) checked_indent(*width, "indent", args.line);
    const std::string indentation = width == nullptr ? "    " : (width->is_string() ? width->as_string() : std::string(static_cast<size_t>(std::max<int64_t>(width->as_int(), 0)), ' '));
    const bool blank = flag_argument(args, 2, "blank");
    // jinja2 splits text + "\n" into lines, which is the text split at each newline.
    std::vector<std::string> lines;
    const std::string s = v.str();
    size_t start = 0;
    for (size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', start)) {
        lines.push_back(s.substr(start, at - start));
        start = at + 1;
    }
    lines.push_back(s.substr(start));
    std::string out = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
        out += '\n';
        if (blank || !lines[i].empty()) out += indentation;
        out += lines[i];
    }
    return Value(flag_argument(args, 1, "first") ? indentation + out : out);
}

Value default_filter(const Value& v, const CallArgs& args) {
    const Value* fallback = argument(args, 0, "default_value");
    const bool use = v.is_undefined() || (flag_argument(args, 1, "boolean") && !v.truthy());
    return use ? (fallback ? *fallback : Value("")) : v;
}

Value first_or_last(const Value& v, const CallArgs& args, bool first) {
    const ValueList items = iterate(v, args.line);
    if (items.empty()) return Value(Undefined{std::string("No ") + (first ? "first" : "last") + " item, sequence was empty."});
    return first ? items.front() : items.back();
}

Value min_or_max(const Value& v, const CallArgs& args, bool want_max) {
    const ValueList items = iterate(v, args.line);
    if (items.empty()) return Value(Undefined{"No aggregated item, sequence was empty."});
    Value best = items[0];
    for (const Value& item : items) {
        if (want_max ? less_than(best, item, args.line) : less_than(item, best, args.line)) best = item;
    }
    return best;
}

const std::unordered_map<std::string, FilterFunction>& filters();

}  // namespace

bool has_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& subject, const CallArgs& args) {
    const auto it = filters().find(name);
    if (it == filters().end()) throw TemplateError("no filter named '" + name + "'", args.line);
    return it->second(subject, args);
}

namespace {

Value string_filter(const Value& v, const CallArgs& args, const std::function<std::string(const std::string&)>& f) {
    require_defined(v, args.line);
    return Value(f(v.str()));
}

const std::unordered_map<std::string, FilterFunction>& filters() {
    static const std::unordered_map<std::string, FilterFunction> table = {
        {"trim", [](const Value& v, const CallArgs& a) {
             const Value* chars = argument(a, 0, "chars");
             return string_filter(v, a, [&](const std::string& s) { return strip_chars(s, chars && chars->is_string() ? &chars->as_string() : nullptr, true, true); });
         }},
        {"upper", [](const Value& v, const CallArgs& a) { return string_filter(v, a, [](const std::string& s) { return ascii_case(s, true); }); }},
        {"lower", [](const Value& v, const CallArgs& a) { return string_filter(v, a, [](const std::string& s) { return ascii_case(s, false); }); }},
        {"title", [](const Value& v, const CallArgs& a) { return string_filter(v, a, jinja_title); }},
        {"python_title", [](const Value& v, const CallArgs& a) { return string_filter(v, a, python_title); }},
        {"capitalize", [](const Value& v, const CallArgs& a) { return string_filter(v, a, capitalize); }},
        {"escape", [](const Value& v, const CallArgs& a) { return string_filter(v, a, html_escape); }},
        {"e", [](const Value& v, const CallArgs& a) { return string_filter(v, a, html_escape); }},
        {"forceescape", [](const Value& v, const CallArgs& a) { return string_filter(v, a, html_escape); }},
        {"safe", [](const Value& v, const CallArgs&) { return v; }},
        {"string", [](const Value& v, const CallArgs&) { return Value(v.str()); }},
        {"replace", [](const Value& v, const CallArgs& a) {
             CallArgs rest = a;
             return get_method(Value(v.str()), "replace", a.line)->as_function()(rest);
         }},
        {"tojson", [](const Value& v, const CallArgs& a) {
             const Value* indent = argument(a, 0, "indent");
             for (const auto& named : a.named) {
                 if (named.first != "indent") throw TemplateError("tojson: unsupported argument '" + named.first + "' (only indent)", a.line);
             }
             const bool indented = indent != nullptr && !indent->is_none();
             return Value(python_json_dumps(v, indented ? static_cast<int>(checked_indent(*indent, "tojson", a.line)) : -1, a.line));
         }},
        {"length", length_of},
        {"count", length_of},
        {"join", join_items},
        {"first", [](const Value& v, const CallArgs& a) { return first_or_last(v, a, true); }},
        {"last", [](const Value& v, const CallArgs& a) {
             // jinja2's last reverses the sequence; a string's last character is its last code point.
             return first_or_last(v, a, false);
         }},
        {"default", default_filter},
        {"d", default_filter},
        {"list", [](const Value& v, const CallArgs& a) { return Value(iterate(v, a.line)); }},
        {"items", [](const Value& v, const CallArgs& a) {
             if (v.is_undefined()) return Value(ValueList{});
             if (!v.is_dict()) throw TemplateError("items: needs a mapping", a.line);
             return get_method(v, "items", a.line)->as_function()(CallArgs{{}, {}, a.line});
         }},
        {"selectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, true); }},
        {"rejectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, false); }},
        {"select", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, true); }},
        {"reject", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, false); }},
        {"map", map_items},
        {"unique", unique_items},
        {"sort", sort_items},
        {"reverse", [](const Value& v, const CallArgs& a) {
             ValueList items = iterate(v, a.line);
             std::reverse(items.begin(), items.end());
             if (!v.is_string()) return Value(std::move(items));
             std::string out;
             for (const Value& c : items) out += c.as_string();
             return Value(std::move(out));
         }},
        {"abs", [](const Value& v, const CallArgs& a) {
             if (v.kind() == Value::Kind::Float) return Value(std::fabs(v.as_double()));
             if (v.is_integer()) return v.as_int() < 0 ? unary_minus(v, a.line) : Value(v.as_int());
             throw TemplateError("abs: needs a number", a.line);
         }},
        {"round", round_number},
        {"int", int_of},
        {"float", float_of},
        {"indent", indent_text},
        {"min", [](const Value& v, const CallArgs& a) { return min_or_max(v, a, false); }},
        {"max", [](const Value& v, const CallArgs& a) { return min_or_max(v, a, true); }},
        {"sum", [](const Value& v, const CallArgs& a) {
             Value total(int64_t{0});
             for (const Value& item : iterate(v, a.line)) total = binary_operation("+", total, item, a.line);
             return total;
         }},
        {"attr", [](const Value& v, const CallArgs& a) {
             const Value* name = argument(a, 0, "name");
             if (name == nullptr || !name->is_string()) throw TemplateError("attr: needs a name", a.line);
             return get_attribute(v, name->as_string(), a.line);
         }},
    };
    return table;
}

}  // namespace
}  // namespace inferscope::chat
