// jinja2's tests (`x is defined`, `n is divisibleby 3`), as its default environment defines them.
#include <cctype>
#include <functional>
#include <unordered_map>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

using TestFunction = std::function<bool(const Value&, const CallArgs&)>;

const Value& required_argument(const CallArgs& args, const char* test) {
    const Value* v = args.get(0, "other");
    if (v == nullptr) throw TemplateError(std::string("test '") + test + "' needs an argument", args.line);
    return *v;
}

int64_t integer_subject(const Value& v, const CallArgs& args, const char* test) {
    if (!v.is_integer()) throw TemplateError(std::string("test '") + test + "' needs an integer, not a " + v.type_name(), args.line);
    return v.as_int();
}

// -1 divides everything; asked with %, the smallest int64 would overflow.
bool python_mod_zero(int64_t value, int64_t divisor) { return divisor == -1 || (divisor != 0 && value % divisor == 0); }

bool all_cased(const std::string& s, bool upper) {
    bool any_letter = false;
    for (unsigned char c : s) {
        if (std::isalpha(c)) {
            any_letter = true;
            if (upper ? std::islower(c) : std::isupper(c)) return false;
        }
    }
    return any_letter;
}

const std::unordered_map<std::string, TestFunction>& tests() {
    static const std::unordered_map<std::string, TestFunction> table = {
        {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
        {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
        {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
        {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
        // Python's bool is a Number but jinja2's `integer` test leaves it out.
        {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
        {"integer", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Int; }},
        {"float", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Float; }},
        {"boolean", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Bool; }},
        {"true", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Bool && v.as_bool(); }},
        {"false", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Bool && !v.as_bool(); }},
        {"mapping", [](const Value& v, const CallArgs&) { return v.is_dict(); }},
        // jinja2's Undefined can be iterated (over nothing) and has __len__ and __getitem__.
        {"iterable", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
        {"sequence", [](const Value& v, const CallArgs&) { return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined(); }},
        {"callable", [](const Value& v, const CallArgs&) { return v.kind() == Value::Kind::Function; }},
        {"odd", [](const Value& v, const CallArgs& a) { return integer_subject(v, a, "odd") % 2 != 0; }},
        {"even", [](const Value& v, const CallArgs& a) { return integer_subject(v, a, "even") % 2 == 0; }},
        {"divisibleby", [](const Value& v, const CallArgs& a) {
             const Value& d = required_argument(a, "divisibleby");
             return python_mod_zero(integer_subject(v, a, "divisibleby"), integer_subject(d, a, "divisibleby"));
         }},
        {"lower", [](const Value& v, const CallArgs&) { return v.is_string() && all_cased(v.as_string(), false); }},
        {"upper", [](const Value& v, const CallArgs&) { return v.is_string() && all_cased(v.as_string(), true); }},
        {"escaped", [](const Value&, const CallArgs&) { return false; }},
        {"in", [](const Value& v, const CallArgs& a) { return contains(required_argument(a, "in"), v, a.line); }},
        {"sameas", [](const Value& v, const CallArgs& a) {
             const Value& other = required_argument(a, "sameas");
             return v.kind() == other.kind() && (v.is_none() || v.is_undefined() || ((v.is_list() || v.is_dict() || v.kind() == Value::Kind::Bool) && v.equals(other)));
         }},
    };
    return table;
}

// The tests that compare with an argument, by the operator they stand for.
const std::unordered_map<std::string, std::string>& comparison_tests() {
    static const std::unordered_map<std::string, std::string> operators = {
        {"equalto", "=="}, {"eq", "=="}, {"==", "=="}, {"ne", "!="}, {"!=", "!="}, {"lt", "<"}, {"lessthan", "<"}, {"<", "<"},
        {"le", "<="}, {"<=", "<="}, {"gt", ">"}, {"greaterthan", ">"}, {">", ">"}, {"ge", ">="}, {">=", ">="},
    };
    return operators;
}

}  // namespace

bool has_test(const std::string& name) { return tests().count(name) != 0 || comparison_tests().count(name) != 0; }

bool apply_test(const std::string& name, const Value& subject, const CallArgs& args) {
    const auto it = tests().find(name);
    if (it != tests().end()) return it->second(subject, args);
    const auto comparison = comparison_tests().find(name);
    if (comparison != comparison_tests().end()) {
        return binary_operation(comparison->second, subject, required_argument(args, name.c_str()), args.line).truthy();
    }
    throw TemplateError("no test named '" + name + "'", args.line);
}

}  // namespace inferscope::chat
