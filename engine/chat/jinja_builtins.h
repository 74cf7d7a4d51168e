#pragma once
// What expressions do to values, with Python's and jinja2's semantics: operators, attribute and
// item access, iteration, filters, tests and the methods of str and dict. Every failure throws
// TemplateError naming the problem and the template line.
#include <optional>
#include <string>

#include "engine/chat/jinja_value.h"

namespace inferscope::chat {

// jinja_operators.cpp
Value binary_operation(const std::string& op, const Value& left, const Value& right, int line);
Value unary_minus(const Value& operand, int line);
// Python's <, with its TypeError for values without an order.
bool less_than(const Value& left, const Value& right, int line);
bool contains(const Value& container, const Value& item, int line);
// The items a for loop visits: a list's items, a dict's keys, a string's characters; undefined
// visits nothing.
ValueList iterate(const Value& value, int line);
// Throws the UndefinedError of jinja2 ("'x' is undefined") when `value` is undefined.
void require_defined(const Value& value, int line);

// jinja_access.cpp: obj.name tries the attribute then the item, obj[key] the other way round.
Value get_attribute(const Value& object, const std::string& name, int line);
Value get_item(const Value& object, const Value& key, int line);
Value get_slice(const Value& object, std::optional<int64_t> start, std::optional<int64_t> stop, std::optional<int64_t> step, int line);
// A bound method (str.strip, dict.items, ...) or nullopt when the type has no such method.
std::optional<Value> get_method(const Value& object, const std::string& name, int line);

// jinja_filters.cpp
bool has_filter(const std::string& name);
Value apply_filter(const std::string& name, const Value& subject, const CallArgs& args);

// jinja_tests.cpp
bool has_test(const std::string& name);
bool apply_test(const std::string& name, const Value& subject, const CallArgs& args);

// Python's str.strip family: `chars` of nullptr strips whitespace.
std::string strip_chars(const std::string& text, const std::string* chars, bool left, bool right);

}  // namespace inferscope::chat
