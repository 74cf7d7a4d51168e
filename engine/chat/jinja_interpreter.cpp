#include "engine/chat/jinja_interpreter.h"

#include <cmath>

#include <algorithm>
#include <optional>
#include <unordered_map>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

// Variables visible at one point. A for loop gives each iteration its own scope (a `set` inside
// does not outlive the iteration, as in jinja2); a macro call starts from the globals.
struct Scope {
    std::unordered_map<std::string, Value> variables;
    const Scope* parent = nullptr;

    const Value* lookup(const std::string& name) const {
        for (const Scope* s = this; s != nullptr; s = s->parent) {
            const auto it = s->variables.find(name);
            if (it != s->variables.end()) return &it->second;
        }
        return nullptr;
    }
};

enum class Flow { Normal, Break, Continue };

Value make_namespace(const CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    for (const Value& initial : args.positional) {
        if (!initial.is_dict()) throw TemplateError("namespace() takes keyword arguments or a dict", args.line);
        for (const auto& [key, value] : initial.as_dict().items()) ns->attributes.set(key, value);
    }
    for (const auto& [key, value] : args.named) ns->attributes.set(key, value);
    return Value(std::move(ns));
}

constexpr auto kMaxRangeItems = static_cast<int64_t>(kMaxTemplateListItems);

Value make_range(const CallArgs& args) {
    for (const Value& v : args.positional) {
        if (!v.is_integer()) throw TemplateError("range() takes integers", args.line);
    }
    const size_t n = args.positional.size();
    if (n < 1 || n > 3) throw TemplateError("range() takes 1 to 3 arguments", args.line);
    const int64_t start = n == 1 ? 0 : args.positional[0].as_int();
    const int64_t stop = n == 1 ? args.positional[0].as_int() : args.positional[1].as_int();
    const int64_t step = n == 3 ? args.positional[2].as_int() : 1;
    if (step == 0) throw TemplateError("range() step must not be zero", args.line);
    // Counted in unsigned arithmetic: stop - start can overflow 64 bits.
    uint64_t count = 0;
    if (step > 0 && start < stop) {
        count = (static_cast<uint64_t>(stop) - static_cast<uint64_t>(start) - 1) / static_cast<uint64_t>(step) + 1;
    } else if (step < 0 && start > stop) {
        count = (static_cast<uint64_t>(start) - static_cast<uint64_t>(stop) - 1) / (uint64_t{0} - static_cast<uint64_t>(step)) + 1;
    }
    if (count > static_cast<uint64_t>(kMaxRangeItems)) {
        throw TemplateError("range() of " + std::to_string(count) + " items is longer than a template may build (" +
                                std::to_string(kMaxRangeItems) + ")",
                            args.line);
    }
    ValueList out;
    // Element k is start + k * step, formed in unsigned arithmetic: it lies between start and
    // stop, but `i += step` past the last one could overflow.
    for (uint64_t k = 0; k < count; ++k) {
        out.emplace_back(static_cast<int64_t>(static_cast<uint64_t>(start) + k * static_cast<uint64_t>(step)));
    }
    return Value(std::move(out));
}

Value make_dict(const CallArgs& args) {
    ValueDict dict;
    for (const auto& [key, value] : args.named) dict.set(key, value);
    return Value(std::move(dict));
}

void unpack_into(Scope& scope, const std::vector<std::string>& targets, const Value& value, int line) {
    if (targets.size() == 1) {
        scope.variables[targets[0]] = value;
        return;
    }
    const ValueList items = iterate(value, line);
    if (items.size() != targets.size()) {
        throw TemplateError((items.size() > targets.size() ? "too many" : "not enough") + std::string(" values to unpack (expected ") +
                                std::to_string(targets.size()) + ")",
                            line);
    }
    for (size_t i = 0; i < targets.size(); ++i) scope.variables[targets[i]] = items[i];
}

// jinja2's `loop` object for the iteration at `index` of `items`.
Value loop_object(const ValueList& items, size_t index) {
    const auto n = static_cast<int64_t>(items.size());
    const auto i = static_cast<int64_t>(index);
    ValueDict loop;
    loop.set("index", Value(i + 1));
    loop.set("index0", Value(i));
    loop.set("revindex", Value(n - i));
    loop.set("revindex0", Value(n - i - 1));
    loop.set("first", Value(i == 0));
    loop.set("last", Value(i == n - 1));
    loop.set("length", Value(n));
    loop.set("depth", Value(1));
    loop.set("depth0", Value(0));
    loop.set("previtem", index > 0 ? items[index - 1] : Value(Undefined{"there is no previous item"}));
    loop.set("nextitem", index + 1 < items.size() ? items[index + 1] : Value(Undefined{"there is no next item"}));
    loop.set("cycle", Value(Function([index](const CallArgs& args) {
                 if (args.positional.empty()) throw TemplateError("loop.cycle() needs at least one value", args.line);
                 return args.positional[index % args.positional.size()];
             })));
    return Value(std::move(loop));
}

// What one rendering may spend, so that a template from a model file cannot hang or exhaust
// the program: real chat templates take a few thousand steps, a few KiB of output and two or
// three levels of macro calls.
constexpr int64_t kMaxRenderSteps = 1'000'000;
constexpr int kMaxMacroDepth = 64;

class Renderer {
public:
    explicit Renderer(const Scope& globals) : globals_(globals) {}

    Flow render(const NodeList& nodes, Scope& scope, std::string& out) {
        for (const auto& node : nodes) {
            spend_step(out, node->line);
            const Flow flow = render_node(*node, scope, out);
            if (flow != Flow::Normal) return flow;
        }
        return Flow::Normal;
    }

private:
    void spend_step(const std::string& out, int line) {
        if (++steps_ > kMaxRenderSteps) {
            throw TemplateError("the template takes more than " + std::to_string(kMaxRenderSteps) + " steps to render", line);
        }
        check_template_string_size(out.size(), line);
    }

    Flow render_node(const Node& node, Scope& scope, std::string& out) {
        switch (node.kind) {
            case Node::Kind::Text: out += node.text; return Flow::Normal;
            case Node::Kind::Output: out += eval(*node.expr, scope).str(); return Flow::Normal;
            case Node::Kind::If:
                for (const IfBranch& branch : node.branches) {
                    if (!branch.condition || eval(*branch.condition, scope).truthy()) return render(branch.body, scope, out);
                }
                return Flow::Normal;
            case Node::Kind::For: render_for(node, scope, out); return Flow::Normal;
            case Node::Kind::Set: assign(node, eval(*node.expr, scope), scope); return Flow::Normal;
            case Node::Kind::SetBlock: {
                std::string captured;
                render(node.body, scope, captured);
                scope.variables[node.targets[0]] = Value(std::move(captured));
                return Flow::Normal;
            }
            case Node::Kind::Macro: scope.variables[node.name] = make_macro(node); return Flow::Normal;
            case Node::Kind::Break: return Flow::Break;
            case Node::Kind::Continue: return Flow::Continue;
            case Node::Kind::Generation: return render(node.body, scope, out);
        }
        return Flow::Normal;
    }

    void assign(const Node& node, const Value& value, Scope& scope) {
        if (node.attribute.empty()) {
            unpack_into(scope, node.targets, value, node.line);
            return;
        }
        const Value* target = scope.lookup(node.targets[0]);
        if (target == nullptr || target->kind() != Value::Kind::Namespace) {
            throw TemplateError("cannot assign attribute '" + node.attribute + "' of '" + node.targets[0] + "': it is not a namespace", node.line);
        }
        target->as_namespace().attributes.set(node.attribute, value);
    }

    void render_for(const Node& node, Scope& scope, std::string& out) {
        // The `if` of a for filters before the loop runs, so loop.length and loop.last count
        // only the items that pass.
        ValueList items;
        for (Value& item : iterate(eval(*node.expr, scope), node.line)) {
            if (node.condition) {
                Scope filter_scope{{}, &scope};
                unpack_into(filter_scope, node.targets, item, node.line);
                if (!eval(*node.condition, filter_scope).truthy()) continue;
            }
            items.push_back(std::move(item));
        }
        for (size_t i = 0; i < items.size(); ++i) {
            spend_step(out, node.line);
            Scope iteration{{}, &scope};
            unpack_into(iteration, node.targets, items[i], node.line);
            iteration.variables["loop"] = loop_object(items, i);
            if (render(node.body, iteration, out) == Flow::Break) break;
        }
        if (items.empty()) render(node.else_body, scope, out);
    }

    Value make_macro(const Node& node) {
        return Value(Function([this, &node](const CallArgs& args) {
            Scope call_scope{{}, &globals_};
            if (args.positional.size() > node.params.size()) {
                throw TemplateError("macro '" + node.name + "' takes " + std::to_string(node.params.size()) + " arguments", args.line);
            }
            for (size_t i = 0; i < node.params.size(); ++i) {
                const MacroParam& param = node.params[i];
                const Value* given = args.get(i, param.name);
                call_scope.variables[param.name] = given ? *given : (param.default_value ? eval(*param.default_value, call_scope) : Value(Undefined{"parameter '" + param.name + "' was not provided"}));
            }
            for (const auto& named : args.named) {
                const bool known = std::any_of(node.params.begin(), node.params.end(), [&](const MacroParam& p) { return p.name == named.first; });
                if (!known) throw TemplateError("macro '" + node.name + "' has no parameter '" + named.first + "'", args.line);
            }
            if (macro_depth_ >= kMaxMacroDepth) {
                throw TemplateError("macro '" + node.name + "' calls nest more than " + std::to_string(kMaxMacroDepth) +
                                        " levels deep",
                                    args.line);
            }
            ++macro_depth_;
            std::string out;
            try {
                render(node.body, call_scope, out);
            } catch (...) {
                --macro_depth_;
                throw;
            }
            --macro_depth_;
            return Value(std::move(out));
        }));
    }

    CallArgs eval_arguments(const Expr& e, size_t first_operand, Scope& scope) {
        CallArgs args{{}, {}, e.line};
        for (size_t i = first_operand; i < e.operands.size(); ++i) args.positional.push_back(eval(*e.operands[i], scope));
        for (const KeywordArg& k : e.keywords) args.named.emplace_back(k.name, eval(*k.value, scope));
        return args;
    }

    std::optional<int64_t> slice_bound(const ExprPtr& e, Scope& scope) {
        if (!e) return std::nullopt;
        const Value v = eval(*e, scope);
        if (v.is_none() || v.is_undefined()) return std::nullopt;
        if (!v.is_integer()) throw TemplateError("slice indices must be integers or None", e->line);
        return v.as_int();
    }

    // A value of the wrong kind met inside a callable is reported at the call's line, with
    // the callable's name (`kind` "filter", "test" or "call"), built only then.
    template <typename Call>
    static Value located(const char* kind, const std::string& name, int line, Call&& call) {
        try {
            return call();
        } catch (const ValueKindError& error) {
            if (error.line() > 0) throw;
            throw ValueKindError(std::string(kind) + (name.empty() ? "" : " " + name) + ": " + error.what(), line);
        }
    }

    Value eval_call(const Expr& e, Scope& scope) {
        const Value callee = eval(*e.operands[0], scope);
        require_defined(callee, e.line);
        if (callee.kind() != Value::Kind::Function) throw TemplateError("'" + callee.type_name() + "' is not callable", e.line);
        const CallArgs args = eval_arguments(e, 1, scope);
        return located("call", e.operands[0]->name, e.line, [&] { return callee.as_function()(args); });
    }

    Value eval_binary(const Expr& e, Scope& scope) {
        const Value left = eval(*e.operands[0], scope);
        if (e.name == "and") return left.truthy() ? eval(*e.operands[1], scope) : left;
        if (e.name == "or") return left.truthy() ? left : eval(*e.operands[1], scope);
        return binary_operation(e.name, left, eval(*e.operands[1], scope), e.line);
    }

    Value eval_unary(const Expr& e, Scope& scope) {
        const Value operand = eval(*e.operands[0], scope);
        if (e.name == "not") return Value(!operand.truthy());
        if (e.name == "-") return unary_minus(operand, e.line);
        require_defined(operand, e.line);
        if (!operand.is_number()) throw TemplateError("bad operand type for unary +: '" + operand.type_name() + "'", e.line);
        return operand;
    }

    Value eval_dict(const Expr& e, Scope& scope) {
        ValueDict dict;
        for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
            const Value key = eval(*e.operands[i], scope);
            if (!key.is_string()) throw TemplateError("unsupported: dict keys other than strings", e.line);
            dict.set(key.as_string(), eval(*e.operands[i + 1], scope));
        }
        return Value(std::move(dict));
    }

    Value eval(const Expr& e, Scope& scope) {
        switch (e.kind) {
            case Expr::Kind::Literal: return e.literal;
            case Expr::Kind::Name: {
                const Value* v = scope.lookup(e.name);
                return v ? *v : Value(Undefined{"'" + e.name + "' is undefined"});
            }
            case Expr::Kind::List:
            case Expr::Kind::Tuple: return Value(eval_arguments(e, 0, scope).positional);
            case Expr::Kind::Dict: return eval_dict(e, scope);
            case Expr::Kind::Attribute: return get_attribute(eval(*e.operands[0], scope), e.name, e.line);
            case Expr::Kind::Subscript: return get_item(eval(*e.operands[0], scope), eval(*e.operands[1], scope), e.line);
            case Expr::Kind::Slice: {
                const Value target = eval(*e.operands[0], scope);
                return get_slice(target, slice_bound(e.operands[1], scope), slice_bound(e.operands[2], scope), slice_bound(e.operands[3], scope), e.line);
            }
            case Expr::Kind::Call: return eval_call(e, scope);
            case Expr::Kind::Filter: {
                const Value subject = eval(*e.operands[0], scope);
                const CallArgs args = eval_arguments(e, 1, scope);
                return located("filter", e.name, e.line, [&] { return apply_filter(e.name, subject, args); });
            }
            case Expr::Kind::Test: {
                const Value subject = eval(*e.operands[0], scope);
                const CallArgs args = eval_arguments(e, 1, scope);
                return located("test", e.name, e.line, [&] { return Value(apply_test(e.name, subject, args) != e.negated); });
            }
            case Expr::Kind::Unary: return eval_unary(e, scope);
            case Expr::Kind::Binary: return eval_binary(e, scope);
            case Expr::Kind::Conditional:
                if (eval(*e.operands[1], scope).truthy()) return eval(*e.operands[0], scope);
                return e.operands[2] ? eval(*e.operands[2], scope) : Value(Undefined{"the condition was false and there is no else"});
        }
        return Value();
    }

    const Scope& globals_;
    int64_t steps_ = 0;
    int macro_depth_ = 0;
};

}  // namespace

Template::Template(const std::string& source) : nodes_(parse_template(tokenize_template(source))) {}

std::string Template::render(const ValueDict& variables) const {
    Scope builtins;
    builtins.variables["namespace"] = Value(Function(make_namespace));
    builtins.variables["range"] = Value(Function(make_range));
    builtins.variables["dict"] = Value(Function(make_dict));
    Scope globals{{}, &builtins};
    for (const auto& [name, value] : variables.items()) globals.variables[name] = value;
    std::string out;
    Renderer(globals).render(nodes_, globals, out);
    return out;
}

}  // namespace inferscope::chat
