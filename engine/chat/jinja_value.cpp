#include "engine/chat/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "engine/core/error.h"

namespace inferscope::chat {

const Value* ValueDict::find(const std::string& key) const {
    for (const auto& item : items_) {
        if (item.first == key) return &item.second;
    }
    return nullptr;
}

void ValueDict::set(const std::string& key, Value value) {
    for (auto& item : items_) {
        if (item.first == key) {
            item.second = std::move(value);
            return;
        }
    }
    items_.emplace_back(key, std::move(value));
}

Value Value::from_json(const nlohmann::ordered_json& j) {
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null: return Value(None{});
        case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
        case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            ValueList list;
            for (const auto& item : j) list.push_back(from_json(item));
            return Value(std::move(list));
        }
        case nlohmann::ordered_json::value_t::object: {
            ValueDict dict;
            for (const auto& [key, item] : j.items()) dict.set(key, from_json(item));
            return Value(std::move(dict));
        }
        default: throw TemplateError("a template variable holds JSON that has no template value (binary data)");
    }
}

int64_t Value::as_int() const {
    if (kind() == Kind::Bool) return as_bool() ? 1 : 0;
    return held<int64_t>("an integer");
}

void Value::throw_wrong_kind(const char* expected) const {
    throw ValueKindError(std::string("expected ") + expected + ", got " + type_name());
}

double Value::as_double() const {
    if (kind() == Kind::Float) return std::get<double>(data_);
    return static_cast<double>(as_int());
}

bool Value::truthy() const {
    switch (kind()) {
        case Kind::Undefined:
        case Kind::None: return false;
        case Kind::Bool: return as_bool();
        case Kind::Int: return as_int() != 0;
        case Kind::Float: return as_double() != 0.0;
        case Kind::String: return !as_string().empty();
        case Kind::List: return !as_list().empty();
        case Kind::Dict: return as_dict().size() != 0;
        default: return true;
    }
}

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    // Shortest round-trip digits in scientific form, then laid out as Python's repr does:
    // positional for exponents in [-4, 16), scientific with a two-digit exponent otherwise.
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
    std::string sci(buffer, result.ptr);
    const size_t e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    const int exponent = std::stoi(sci.substr(e + 1));
    const bool negative = mantissa[0] == '-';
    if (negative) mantissa.erase(0, 1);
    std::string digits;
    for (char c : mantissa) {
        if (c != '.') digits += c;
    }
    std::string out = negative ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out.append("0.").append(static_cast<size_t>(-exponent - 1), '0').append(digits);
        } else if (digits.size() <= static_cast<size_t>(exponent) + 1) {
            out.append(digits).append(static_cast<size_t>(exponent) + 1 - digits.size(), '0').append(".0");
        } else {
            out.append(digits, 0, static_cast<size_t>(exponent) + 1).append(".").append(digits, static_cast<size_t>(exponent) + 1);
        }
    } else {
        out.append(digits, 0, 1);
        if (digits.size() > 1) out.append(".").append(digits, 1);
        char exp_text[16];
        std::snprintf(exp_text, sizeof exp_text, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
        out += exp_text;
    }
    return out;
}

namespace {

std::string python_string_repr(const std::string& s) {
    // Python prefers single quotes and switches to double ones when that avoids escaping.
    const char quote = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
    std::string out(1, quote);
    for (unsigned char c : s) {
        if (c == '\\' || c == static_cast<unsigned char>(quote)) {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + quote;
}

}  // namespace

std::string Value::str() const {
    switch (kind()) {
        case Kind::Undefined: return "";
        case Kind::None: return "None";
        case Kind::Bool: return as_bool() ? "True" : "False";
        case Kind::Int: return std::to_string(as_int());
        case Kind::Float: return python_float_repr(as_double());
        case Kind::String: return as_string();
        default: return repr();
    }
}

void check_template_string_size(size_t bytes, int line) {
    if (bytes > kMaxTemplateStringBytes) {
        throw TemplateError("the template builds a string of more than " + std::to_string(kMaxTemplateStringBytes >> 20) +
                                " MiB",
                            line);
    }
}

std::string Value::repr() const {
    switch (kind()) {
        case Kind::String: return python_string_repr(as_string());
        case Kind::List: {
            std::string out = "[";
            for (size_t i = 0; i < as_list().size(); ++i) {
                out += (i ? ", " : "") + as_list()[i].repr();
                check_template_string_size(out.size(), 0);
            }
            return out + "]";
        }
        case Kind::Dict: {
            std::string out = "{";
            bool first = true;
            for (const auto& [key, item] : as_dict().items()) {
                out += (first ? "" : ", ") + python_string_repr(key) + ": " + item.repr();
                check_template_string_size(out.size(), 0);
                first = false;
            }
            return out + "}";
        }
        case Kind::Function: return "<function>";
        case Kind::Namespace: return "<Namespace>";
        default: return str();
    }
}

bool Value::equals(const Value& other) const {
    if (is_number() && other.is_number()) {
        if (is_integer() && other.is_integer()) return as_int() == other.as_int();
        return as_double() == other.as_double();
    }
    if (kind() != other.kind()) return false;
    switch (kind()) {
        case Kind::Undefined:
        case Kind::None: return true;
        case Kind::String: return as_string() == other.as_string();
        case Kind::List: {
            const ValueList& a = as_list();
            const ValueList& b = other.as_list();
            if (a.size() != b.size()) return false;
            for (size_t i = 0; i < a.size(); ++i) {
                if (!a[i].equals(b[i])) return false;
            }
            return true;
        }
        case Kind::Dict: {
            if (as_dict().size() != other.as_dict().size()) return false;
            for (const auto& [key, item] : as_dict().items()) {
                const Value* theirs = other.as_dict().find(key);
                if (theirs == nullptr || !item.equals(*theirs)) return false;
            }
            return true;
        }
        case Kind::Function: return &as_function() == &other.as_function();
        case Kind::Namespace: return &as_namespace() == &other.as_namespace();
        default: return false;
    }
}

std::string Value::type_name() const {
    switch (kind()) {
        case Kind::Undefined: return "undefined";
        case Kind::None: return "NoneType object";
        case Kind::Bool: return "bool object";
        case Kind::Int: return "int object";
        case Kind::Float: return "float object";
        case Kind::String: return "str object";
        case Kind::List: return "list object";
        case Kind::Dict: return "dict object";
        case Kind::Function: return "function object";
        default: return "Namespace object";
    }
}

const Value* CallArgs::get(size_t position, const std::string& name) const {
    if (position < positional.size()) return &positional[position];
    for (const auto& [key, value] : named) {
        if (key == name) return &value;
    }
    return nullptr;
}

std::optional<int64_t> parse_decimal_int64(const std::string& digits) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value, 10);
    if (error != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    return value;
}

std::vector<std::string> utf8_characters(const std::string& text) {
    std::vector<std::string> characters;
    for (size_t i = 0; i < text.size();) {
        size_t length = 1;
        const auto lead = static_cast<unsigned char>(text[i]);
        if (lead >= 0xF0) length = 4;
        else if (lead >= 0xE0) length = 3;
        else if (lead >= 0xC0) length = 2;
        length = std::min(length, text.size() - i);
        characters.push_back(text.substr(i, length));
        i += length;
    }
    return characters;
}

}  // namespace inferscope::chat
