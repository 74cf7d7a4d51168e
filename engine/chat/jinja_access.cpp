// obj.name, obj[key], obj[a:b:c] and the methods of str and dict that chat templates call.
#include <algorithm>
#include <cctype>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

// jinja2's message for a missing attribute or element ("'dict object' has no attribute 'x'").
// Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string here.
Value missing_part(const Value& object, const char* what, const std::string& name) {
    std::string message(1, '\'');
    message.append(object.type_name()).append("' has no ").append(what).append(name);
    return Value(Undefined{std::move(message)});
}

Value missing(const Value& object, const std::string& name) {
    std::string quoted(1, '\'');
    quoted.append(name).append("'");
    return missing_part(object, "attribute ", quoted);
}

// Python's slice.indices(): the positions a slice visits in a sequence of `length` items.
std::vector<size_t> slice_positions(int64_t length, std::optional<int64_t> start, std::optional<int64_t> stop, int64_t step) {
    const int64_t lower = step > 0 ? 0 : -1;
    const int64_t upper = step > 0 ? length : length - 1;
    auto clamp = [&](std::optional<int64_t> bound, int64_t fallback) {
        if (!bound) return fallback;
        int64_t v = *bound < 0 ? *bound + length : *bound;
        return std::clamp(v, lower, upper);
    };
    const int64_t first = clamp(start, step > 0 ? lower : upper);
    const int64_t end = clamp(stop, step > 0 ? upper : lower);
    std::vector<size_t> positions;
    // The distance left is compared with the step before stepping: a step near the ends of
    // int64 would overflow `i += step`.
    const uint64_t stride = step > 0 ? static_cast<uint64_t>(step) : uint64_t{0} - static_cast<uint64_t>(step);
    for (int64_t i = first; step > 0 ? i < end : i > end; i += step) {
        positions.push_back(static_cast<size_t>(i));
        const auto left = static_cast<uint64_t>(step > 0 ? end - i : i - end);
        if (left <= stride) break;
    }
    return positions;
}

// The number of code points in text[0, bytes), to report str.find positions as Python does.
int64_t code_points_before(const std::string& text, size_t bytes) {
    int64_t count = 0;
    for (size_t i = 0; i < bytes && i < text.size(); ++i) count += (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    return count;
}

std::string ascii_case(std::string text, bool upper) {
    for (char& c : text) c = static_cast<char>(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
    return text;
}

const std::string& string_argument(const CallArgs& args, size_t position, const char* name, const char* method) {
    const Value* v = args.get(position, name);
    if (v == nullptr || !v->is_string()) throw TemplateError(std::string(method) + "() needs a string argument '" + name + "'", args.line);
    return v->as_string();
}

ValueList python_split(const std::string& text, const Value* separator, int64_t max_splits) {
    ValueList parts;
    if (separator == nullptr || separator->is_none()) {
        // No separator: runs of whitespace split, and leading/trailing whitespace is dropped.
        size_t i = 0;
        while (true) {
            while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
            if (i >= text.size()) break;
            if (max_splits >= 0 && static_cast<int64_t>(parts.size()) == max_splits) {
                parts.emplace_back(strip_chars(text.substr(i), nullptr, false, true));
                break;
            }
            size_t end = i;
            while (end < text.size() && !std::isspace(static_cast<unsigned char>(text[end]))) ++end;
            parts.emplace_back(text.substr(i, end - i));
            i = end;
        }
        return parts;
    }
    const std::string& sep = separator->as_string();
    if (sep.empty()) throw TemplateError("split(): empty separator");
    size_t start = 0;
    for (size_t at = text.find(sep); at != std::string::npos; at = text.find(sep, start)) {
        if (max_splits >= 0 && static_cast<int64_t>(parts.size()) == max_splits) break;
        parts.emplace_back(text.substr(start, at - start));
        start = at + sep.size();
    }
    parts.emplace_back(text.substr(start));
    return parts;
}

bool affix_matches(const std::string& text, const Value& affix, bool prefix, int line) {
    if (affix.is_list()) {
        return std::any_of(affix.as_list().begin(), affix.as_list().end(), [&](const Value& a) { return affix_matches(text, a, prefix, line); });
    }
    if (!affix.is_string()) throw TemplateError("startswith/endswith: the argument must be a string or a tuple of strings", line);
    const std::string& a = affix.as_string();
    if (a.size() > text.size()) return false;
    return prefix ? text.compare(0, a.size(), a) == 0 : text.compare(text.size() - a.size(), a.size(), a) == 0;
}

std::string replace_all(const std::string& text, const std::string& from, const std::string& to, int64_t count) {
    std::string out;
    size_t start = 0;
    int64_t done = 0;
    if (from.empty()) return text;  // Python inserts between characters; no chat template relies on it
    for (size_t at = text.find(from); at != std::string::npos && (count < 0 || done < count); at = text.find(from, start), ++done) {
        out += text.substr(start, at - start) + to;
        start = at + from.size();
    }
    return out + text.substr(start);
}

int64_t int_argument(const CallArgs& args, size_t position, const char* name, int64_t fallback) {
    const Value* v = args.get(position, name);
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_integer()) throw TemplateError(std::string("argument '") + name + "' must be an integer", args.line);
    return v->as_int();
}

std::optional<Value> string_method(const std::string& s, const std::string& name);
std::optional<Value> dict_method(const Value& dict, const std::string& name);

}  // namespace

std::string strip_chars(const std::string& text, const std::string* chars, bool left, bool right) {
    std::vector<std::string> characters = utf8_characters(text);
    const std::vector<std::string> strip_set = chars ? utf8_characters(*chars) : std::vector<std::string>{};
    auto strippable = [&](const std::string& c) {
        if (chars) return std::find(strip_set.begin(), strip_set.end(), c) != strip_set.end();
        return c.size() == 1 && (std::isspace(static_cast<unsigned char>(c[0])) || (c[0] >= 0x1c && c[0] <= 0x1f));
    };
    size_t begin = 0, end = characters.size();
    while (left && begin < end && strippable(characters[begin])) ++begin;
    while (right && end > begin && strippable(characters[end - 1])) --end;
    std::string out;
    for (size_t i = begin; i < end; ++i) out += characters[i];
    return out;
}

std::optional<Value> get_method(const Value& object, const std::string& name, int /*line*/) {
    if (object.is_string()) return string_method(object.as_string(), name);
    if (object.is_dict()) return dict_method(object, name);
    return std::nullopt;
}

Value get_attribute(const Value& object, const std::string& name, int line) {
    require_defined(object, line);
    if (object.kind() == Value::Kind::Namespace) {
        const Value* v = object.as_namespace().attributes.find(name);
        return v ? *v : missing(object, name);
    }
    if (std::optional<Value> method = get_method(object, name, line)) return *method;
    if (object.is_dict()) {
        const Value* v = object.as_dict().find(name);
        return v ? *v : missing(object, name);
    }
    return missing(object, name);
}

Value get_item(const Value& object, const Value& key, int line) {
    require_defined(object, line);
    if (object.is_dict() && key.is_string()) {
        if (const Value* v = object.as_dict().find(key.as_string())) return *v;
        if (std::optional<Value> method = get_method(object, key.as_string(), line)) return *method;
        return missing(object, key.as_string());
    }
    if ((object.is_list() || object.is_string()) && key.is_integer()) {
        const ValueList items = object.is_list() ? object.as_list() : iterate(object, line);
        const int64_t n = static_cast<int64_t>(items.size());
        const int64_t index = key.as_int() < 0 ? key.as_int() + n : key.as_int();
        if (index >= 0 && index < n) return items[static_cast<size_t>(index)];
        return missing_part(object, "element ", key.str());
    }
    if (key.is_string()) return get_attribute(object, key.as_string(), line);
    return missing_part(object, "element ", key.repr());
}

Value get_slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step, int line) {
    require_defined(object, line);
    if (!object.is_list() && !object.is_string()) throw TemplateError("'" + object.type_name() + "' cannot be sliced", line);
    if (step && *step == 0) throw TemplateError("slice step cannot be zero", line);
    const ValueList items = iterate(object, line);
    const std::vector<size_t> positions = slice_positions(static_cast<int64_t>(items.size()), start, stop, step.value_or(1));
    if (object.is_string()) {
        std::string out;
        for (size_t p : positions) out += items[p].as_string();
        return Value(std::move(out));
    }
    ValueList out;
    for (size_t p : positions) out.push_back(items[p]);
    return Value(std::move(out));
}

namespace {

std::optional<Value> string_strip_method(const std::string& s, const std::string& name) {
    const bool left = name != "rstrip", right = name != "lstrip";
    return Value(Function([s, left, right](const CallArgs& args) {
        const Value* chars = args.get(0, "chars");
        const bool by_chars = chars != nullptr && !chars->is_none();
        if (by_chars && !chars->is_string()) throw TemplateError("strip arg must be None or str", args.line);
        return Value(strip_chars(s, by_chars ? &chars->as_string() : nullptr, left, right));
    }));
}

std::optional<Value> string_search_method(const std::string& s, const std::string& name) {
    return Value(Function([s, name](const CallArgs& args) -> Value {
        if (name == "startswith" || name == "endswith") {
            const Value* affix = args.get(0, "prefix");
            if (affix == nullptr) throw TemplateError(name + "() takes at least 1 argument", args.line);
            return Value(affix_matches(s, *affix, name == "startswith", args.line));
        }
        const std::string& sub = string_argument(args, 0, "sub", name.c_str());
        if (name == "count") {
            int64_t n = 0;
            for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + std::max<size_t>(sub.size(), 1))) ++n;
            return Value(n);
        }
        const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
        return Value(at == std::string::npos ? int64_t{-1} : code_points_before(s, at));
    }));
}

std::optional<Value> string_method(const std::string& s, const std::string& name) {
    if (name == "strip" || name == "lstrip" || name == "rstrip") return string_strip_method(s, name);
    if (name == "startswith" || name == "endswith" || name == "find" || name == "rfind" || name == "count") {
        return string_search_method(s, name);
    }
    if (name == "upper" || name == "lower") return Value(Function([s, name](const CallArgs&) { return Value(ascii_case(s, name == "upper")); }));
    if (name == "title" || name == "capitalize") {
        return Value(Function([s, name](const CallArgs& args) { return apply_filter(name == "title" ? "python_title" : "capitalize", Value(s), CallArgs{{}, {}, args.line}); }));
    }
    if (name == "split") {
        return Value(Function([s](const CallArgs& args) { return Value(python_split(s, args.get(0, "sep"), int_argument(args, 1, "maxsplit", -1))); }));
    }
    if (name == "splitlines") {
        return Value(Function([s](const CallArgs&) {
            ValueList lines;
            size_t start = 0;
            for (size_t at = s.find('\n'); at != std::string::npos; at = s.find('\n', start)) {
                lines.emplace_back(s.substr(start, at - start));
                start = at + 1;
            }
            if (start < s.size()) lines.emplace_back(s.substr(start));
            return Value(std::move(lines));
        }));
    }
    if (name == "replace") {
        return Value(Function([s](const CallArgs& args) {
            return Value(replace_all(s, string_argument(args, 0, "old", "replace"), string_argument(args, 1, "new", "replace"), int_argument(args, 2, "count", -1)));
        }));
    }
    if (name == "join") {
        return Value(Function([s](const CallArgs& args) {
            const Value* items = args.get(0, "iterable");
            if (items == nullptr) throw TemplateError("join() takes exactly one argument", args.line);
            std::string out;
            bool first = true;
            for (const Value& item : iterate(*items, args.line)) {
                if (!item.is_string()) throw TemplateError("join(): sequence item is not a string", args.line);
                out += (first ? "" : s) + item.as_string();
                first = false;
            }
            return Value(std::move(out));
        }));
    }
    if (name == "removeprefix" || name == "removesuffix") {
        return Value(Function([s, name](const CallArgs& args) {
            const std::string& affix = string_argument(args, 0, "affix", name.c_str());
            const bool prefix = name == "removeprefix";
            if (!affix_matches(s, Value(affix), prefix, args.line)) return Value(s);
            return Value(prefix ? s.substr(affix.size()) : s.substr(0, s.size() - affix.size()));
        }));
    }
    if (name == "isdigit" || name == "isspace" || name == "isalpha" || name == "isalnum") {
        return Value(Function([s, name](const CallArgs&) {
            auto test = [&](unsigned char c) {
                if (name == "isdigit") return std::isdigit(c) != 0;
                if (name == "isspace") return std::isspace(c) != 0;
                if (name == "isalpha") return std::isalpha(c) != 0;
                return std::isalnum(c) != 0;
            };
            return Value(!s.empty() && std::all_of(s.begin(), s.end(), test));
        }));
    }
    if (name == "format") {
        return Value(Function([](const CallArgs& args) -> Value { throw TemplateError("unsupported: str.format()", args.line); }));
    }
    return std::nullopt;
}

std::optional<Value> dict_method(const Value& dict, const std::string& name) {
    if (name == "get") {
        return Value(Function([dict](const CallArgs& args) {
            const Value* key = args.get(0, "key");
            if (key == nullptr) throw TemplateError("get() takes at least 1 argument", args.line);
            const Value* found = key->is_string() ? dict.as_dict().find(key->as_string()) : nullptr;
            if (found) return *found;
            const Value* fallback = args.get(1, "default");
            return fallback ? *fallback : Value(None{});
        }));
    }
    if (name == "items" || name == "keys" || name == "values") {
        return Value(Function([dict, name](const CallArgs&) {
            ValueList out;
            for (const auto& [key, value] : dict.as_dict().items()) {
                if (name == "items") out.emplace_back(ValueList{Value(key), value});
                else out.push_back(name == "keys" ? Value(key) : value);
            }
            return Value(std::move(out));
        }));
    }
    return std::nullopt;
}

}  // namespace
}  // namespace inferscope::chat
