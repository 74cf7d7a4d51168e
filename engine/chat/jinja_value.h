#pragma once
// Values of the Jinja2 subset used by chat templates, with Python's semantics: lists, dicts and
// namespaces are shared by reference (a namespace changed inside a loop is seen after it), dicts
// keep insertion order, and printing follows Python's str() (True, None, 1.0, ['a']).
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/core/error.h"

namespace inferscope::chat {

class Value;
struct CallArgs;

// A value of one kind used where another belongs (Value's accessors throw it; the call that
// met it adds its line and name).
class ValueKindError : public TemplateError {
public:
    using TemplateError::TemplateError;
};

// The longest string and list a template may build: it comes from a model file, and real
// chat templates make a few KiB.
inline constexpr size_t kMaxTemplateStringBytes = size_t{64} << 20;
inline constexpr size_t kMaxTemplateListItems = size_t{1} << 20;
// TemplateError (naming `line`) when a string of `bytes` would pass the limit.
void check_template_string_size(size_t bytes, int line);

using ValueList = std::vector<Value>;
using Function = std::function<Value(const CallArgs&)>;

// A missing variable, attribute or item. It prints as nothing and is false, as jinja2's default
// Undefined; `what` is jinja2's message for when it is used further ("'x' is undefined",
// "'dict object' has no attribute 'y'").
struct Undefined {
    std::string what;
};
struct None {};

class ValueDict;
struct Namespace;

class Value {
public:
    enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Function, Namespace };

    Value() : data_(Undefined{}) {}
    Value(Undefined u) : data_(std::move(u)) {}
    Value(None) : data_(None{}) {}
    Value(bool b) : data_(b) {}
    Value(int64_t i) : data_(i) {}
    Value(int i) : data_(static_cast<int64_t>(i)) {}
    Value(double f) : data_(f) {}
    Value(std::string s) : data_(std::move(s)) {}
    Value(const char* s) : data_(std::string(s)) {}
    Value(ValueList list) : data_(std::make_shared<ValueList>(std::move(list))) {}
    Value(ValueDict dict);
    Value(Function fn) : data_(std::make_shared<Function>(std::move(fn))) {}
    Value(std::shared_ptr<Namespace> ns) : data_(std::move(ns)) {}

    // Objects keep their key order (ordered_json), as Python's json.loads does: tojson output
    // and iteration over a message's fields depend on it.
    static Value from_json(const nlohmann::ordered_json& j);

    Kind kind() const { return static_cast<Kind>(data_.index()); }
    bool is_undefined() const { return kind() == Kind::Undefined; }
    bool is_none() const { return kind() == Kind::None; }
    bool is_string() const { return kind() == Kind::String; }
    bool is_list() const { return kind() == Kind::List; }
    bool is_dict() const { return kind() == Kind::Dict; }
    // Python's bool is an int: True + 1 == 2.
    bool is_integer() const { return kind() == Kind::Int || kind() == Kind::Bool; }
    bool is_number() const { return is_integer() || kind() == Kind::Float; }

    // Each accessor throws ValueKindError when the value holds another kind, so a template
    // that passes the wrong type to a filter or test fails cleanly instead of aborting.
    bool as_bool() const { return held<bool>("a boolean"); }
    int64_t as_int() const;  // an Int or a Bool
    double as_double() const;  // any number
    const std::string& as_string() const { return held<std::string>("a string"); }
    ValueList& as_list() const { return *held<std::shared_ptr<ValueList>>("a list"); }
    ValueDict& as_dict() const { return *held<std::shared_ptr<ValueDict>>("a dict"); }
    const Function& as_function() const { return *held<std::shared_ptr<Function>>("a callable"); }
    Namespace& as_namespace() const { return *held<std::shared_ptr<Namespace>>("a namespace"); }
    const std::string& undefined_what() const { return held<Undefined>("undefined").what; }

    bool truthy() const;
    // Python's str(): what {{ value }} prints (Undefined prints as nothing).
    std::string str() const;
    // Python's repr(): how a value looks inside a printed list or dict.
    std::string repr() const;
    // Python's ==.
    bool equals(const Value& other) const;
    // The name jinja2 uses in messages ("dict object", "str object").
    std::string type_name() const;

private:
    template <typename T>
    const T& held(const char* expected) const {
        if (const T* value = std::get_if<T>(&data_)) return *value;
        throw_wrong_kind(expected);
    }
    [[noreturn]] void throw_wrong_kind(const char* expected) const;

    std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<ValueList>,
                 std::shared_ptr<ValueDict>, std::shared_ptr<Function>, std::shared_ptr<Namespace>>
        data_;
};

// Insertion-ordered string-keyed mapping (chat messages are JSON objects, so keys are strings).
class ValueDict {
public:
    const Value* find(const std::string& key) const;
    void set(const std::string& key, Value value);
    const std::vector<std::pair<std::string, Value>>& items() const { return items_; }
    size_t size() const { return items_.size(); }

private:
    std::vector<std::pair<std::string, Value>> items_;
};

// The object namespace(...) returns: attributes that `set ns.attr = ...` may change.
struct Namespace {
    ValueDict attributes;
};

inline Value::Value(ValueDict dict) : data_(std::make_shared<ValueDict>(std::move(dict))) {}

// Arguments of a call: positional first, then keyword ones.
struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> named;
    int line = 0;

    // The argument at `position`, or else the one named `name`, or nullptr.
    const Value* get(size_t position, const std::string& name) const;
};

// Python's repr() of a float (shortest round-trip digits, 1e+16, 1e-05, 1.0).
std::string python_float_repr(double value);
// json.dumps(value, ensure_ascii=False, indent=indent) with Python's separators; indent < 0 is
// None (one line, ", " and ": "), indent >= 0 puts each item on its own line.
std::string python_json_dumps(const Value& value, int indent, int line);

// A run of decimal digits as an int64, or nullopt when it does not fit (Python's ints do not
// overflow, so each caller says what a number past int64 means for it).
std::optional<int64_t> parse_decimal_int64(const std::string& digits);

// Unicode code points of UTF-8 text, and back, for Python's str indexing and len().
std::vector<std::string> utf8_characters(const std::string& text);

}  // namespace inferscope::chat
