// Python's arithmetic, comparison and membership, as jinja2 evaluates them.
#include <cmath>
#include <limits>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

std::string python_type(const Value& v) {
    switch (v.kind()) {
        case Value::Kind::None: return "NoneType";
        case Value::Kind::Bool: return "bool";
        case Value::Kind::Int: return "int";
        case Value::Kind::Float: return "float";
        case Value::Kind::String: return "str";
        case Value::Kind::List: return "list";
        case Value::Kind::Dict: return "dict";
        default: return v.type_name();
    }
}

[[noreturn]] void unsupported_operands(const std::string& op, const Value& a, const Value& b, int line) {
    throw TemplateError("unsupported operand type(s) for " + op + ": '" + python_type(a) + "' and '" + python_type(b) + "'", line);
}

Value repeat(const Value& sequence, int64_t times, int line) {
    const double length = sequence.is_string() ? static_cast<double>(sequence.as_string().size())
                                               : static_cast<double>(sequence.as_list().size());
    const double limit = sequence.is_string() ? static_cast<double>(kMaxTemplateStringBytes)
                                              : static_cast<double>(kMaxTemplateListItems);
    if (length * static_cast<double>(std::max<int64_t>(times, 0)) > limit) {
        throw TemplateError("repeating a sequence " + std::to_string(times) + " times makes more than " +
                                std::to_string(static_cast<size_t>(limit)) + (sequence.is_string() ? " bytes" : " items"),
                            line);
    }
    if (length == 0) return sequence;  // any count of nothing, without looping that count
    if (sequence.is_string()) {
        std::string out;
        for (int64_t i = 0; i < times; ++i) out += sequence.as_string();
        return Value(std::move(out));
    }
    ValueList out;
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), sequence.as_list().begin(), sequence.as_list().end());
    return Value(std::move(out));
}

// base ** exponent by squaring, so a huge exponent costs 64 steps; a result past 64 bits is
// an error, as for + - *.
Value integer_power(int64_t base, int64_t exponent, int line) {
    if (exponent < 0) return Value(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    int64_t result = 1;
    int64_t factor = base;
    for (int64_t e = exponent; e != 0; e >>= 1) {
        const bool overflowed = ((e & 1) && __builtin_mul_overflow(result, factor, &result)) ||
                                (e > 1 && __builtin_mul_overflow(factor, factor, &factor));
        if (overflowed) {
            throw TemplateError("integer overflow: " + std::to_string(base) + " ** " + std::to_string(exponent) +
                                    " does not fit in 64 bits",
                                line);
        }
    }
    return Value(result);
}

// + - * / // % ** between two numbers; bools count as ints.
Value numeric_operation(const std::string& op, const Value& a, const Value& b, int line) {
    const bool integers = a.is_integer() && b.is_integer();
    if ((op == "/" || op == "//" || op == "%") && b.as_double() == 0.0) {
        throw TemplateError(integers && op != "/" ? "integer division or modulo by zero" : "division by zero", line);
    }
    if (op == "/") return Value(a.as_double() / b.as_double());
    if (integers) {
        const int64_t x = a.as_int(), y = b.as_int();
        // Python's integers grow without bound; ours are 64 bits, and a result past them is an
        // error rather than a wrapped (or undefined) value.
        int64_t result = 0;
        const auto checked = [&](bool overflowed) {
            if (overflowed) {
                throw TemplateError("integer overflow: " + std::to_string(x) + " " + op + " " + std::to_string(y) +
                                        " does not fit in 64 bits",
                                    line);
            }
            return Value(result);
        };
        if (op == "+") return checked(__builtin_add_overflow(x, y, &result));
        if (op == "-") return checked(__builtin_sub_overflow(x, y, &result));
        if (op == "*") return checked(__builtin_mul_overflow(x, y, &result));
        if (op == "**") return integer_power(x, y, line);
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
            if (op == "%") return Value(int64_t{0});
            return checked(true);
        }
        // Python floors the quotient and gives the remainder the divisor's sign; the remainder
        // is adjusted directly, since quotient * y can pass 64 bits where x - quotient * y does not.
        const bool inexact_with_signs_apart = (x % y != 0) && ((x < 0) != (y < 0));
        if (op == "//") return Value(x / y - (inexact_with_signs_apart ? 1 : 0));
        return Value(x % y + (inexact_with_signs_apart ? y : 0));
    }
    const double x = a.as_double(), y = b.as_double();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "**") return Value(std::pow(x, y));
    if (op == "//") return Value(std::floor(x / y));
    double remainder = std::fmod(x, y);
    if (remainder != 0.0 && ((remainder < 0) != (y < 0))) remainder += y;  // the divisor's sign, as Python
    return Value(remainder);
}

}  // namespace

void require_defined(const Value& value, int line) {
    if (value.is_undefined()) throw TemplateError(value.undefined_what(), line);
}

Value binary_operation(const std::string& op, const Value& a, const Value& b, int line) {
    if (op == "~") {
        std::string joined = a.str();
        const std::string right = b.str();
        check_template_string_size(joined.size() + right.size(), line);
        return Value(joined + right);
    }
    if (op == "==") return Value(a.equals(b));
    if (op == "!=") return Value(!a.equals(b));
    if (op == "<") return Value(less_than(a, b, line));
    if (op == ">") return Value(less_than(b, a, line));
    if (op == "<=") return Value(!less_than(b, a, line));
    if (op == ">=") return Value(!less_than(a, b, line));
    if (op == "in") return Value(contains(b, a, line));
    if (op == "not in") return Value(!contains(b, a, line));
    require_defined(a, line);
    require_defined(b, line);
    if (a.is_number() && b.is_number()) return numeric_operation(op, a, b, line);
    if (op == "+" && a.is_string() && b.is_string()) {
        check_template_string_size(a.as_string().size() + b.as_string().size(), line);
        return Value(a.as_string() + b.as_string());
    }
    if (op == "+" && a.is_list() && b.is_list()) {
        if (a.as_list().size() + b.as_list().size() > kMaxTemplateListItems) {
            throw TemplateError("the template builds a list of more than " + std::to_string(kMaxTemplateListItems) + " items", line);
        }
        ValueList joined = a.as_list();
        joined.insert(joined.end(), b.as_list().begin(), b.as_list().end());
        return Value(std::move(joined));
    }
    if (op == "*" && (a.is_string() || a.is_list()) && b.is_integer()) return repeat(a, b.as_int(), line);
    if (op == "*" && a.is_integer() && (b.is_string() || b.is_list())) return repeat(b, a.as_int(), line);
    if (op == "%" && a.is_string()) throw TemplateError("unsupported: printf-style string formatting with %", line);
    unsupported_operands(op, a, b, line);
}

Value unary_minus(const Value& operand, int line) {
    require_defined(operand, line);
    if (operand.kind() == Value::Kind::Float) return Value(-operand.as_double());
    if (operand.is_integer()) {
        if (operand.as_int() == std::numeric_limits<int64_t>::min()) {
            throw TemplateError("integer overflow: -(" + std::to_string(operand.as_int()) + ") does not fit in 64 bits", line);
        }
        return Value(-operand.as_int());
    }
    throw TemplateError("bad operand type for unary -: '" + python_type(operand) + "'", line);
}

bool less_than(const Value& a, const Value& b, int line) {
    if (a.is_number() && b.is_number()) {
        if (a.is_integer() && b.is_integer()) return a.as_int() < b.as_int();
        return a.as_double() < b.as_double();
    }
    // UTF-8 byte order is code point order, which is how Python orders strings.
    if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();
    if (a.is_list() && b.is_list()) {
        const ValueList& x = a.as_list();
        const ValueList& y = b.as_list();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!x[i].equals(y[i])) return less_than(x[i], y[i], line);
        }
        return x.size() < y.size();
    }
    require_defined(a, line);
    require_defined(b, line);
    throw TemplateError("'<' not supported between instances of '" + python_type(a) + "' and '" + python_type(b) + "'", line);
}

bool contains(const Value& container, const Value& item, int line) {
    switch (container.kind()) {
        case Value::Kind::String:
            if (!item.is_string()) throw TemplateError("'in <string>' requires string as left operand, not " + python_type(item), line);
            return container.as_string().find(item.as_string()) != std::string::npos;
        case Value::Kind::List:
            for (const Value& v : container.as_list()) {
                if (v.equals(item)) return true;
            }
            return false;
        case Value::Kind::Dict: return item.is_string() && container.as_dict().find(item.as_string()) != nullptr;
        case Value::Kind::Undefined: return false;
        default: throw TemplateError("argument of type '" + python_type(container) + "' is not iterable", line);
    }
}

ValueList iterate(const Value& value, int line) {
    switch (value.kind()) {
        case Value::Kind::Undefined: return {};
        case Value::Kind::List: return value.as_list();
        case Value::Kind::Dict: {
            ValueList keys;
            for (const auto& item : value.as_dict().items()) keys.emplace_back(item.first);
            return keys;
        }
        case Value::Kind::String: {
            ValueList characters;
            for (std::string& c : utf8_characters(value.as_string())) characters.emplace_back(std::move(c));
            return characters;
        }
        default: throw TemplateError("'" + python_type(value) + "' object is not iterable", line);
    }
}

}  // namespace inferscope::chat
