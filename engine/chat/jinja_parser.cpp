#include "engine/chat/jinja_parser.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>

#include "engine/chat/jinja_builtins.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

// Parsing, evaluating and freeing a template recurse once per level of nesting, so a
// template (which comes from a model file) may not nest deeper than this: real chat
// templates stay under twenty levels.
constexpr int kMaxNesting = 200;

void add_operand(Expr& parent, ExprPtr child) {
    if (child) {
        parent.depth = std::max(parent.depth, child->depth + 1);
        if (parent.depth > kMaxNesting) {
            throw TemplateError("expression nested more than " + std::to_string(kMaxNesting) + " levels deep", parent.line);
        }
    }
    parent.operands.push_back(std::move(child));
}

ExprPtr make_expr(Expr::Kind kind, int line, std::string name = {}) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    e->name = std::move(name);
    return e;
}

ExprPtr make_binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    ExprPtr e = make_expr(Expr::Kind::Binary, line, std::move(op));
    add_operand(*e, std::move(left));
    add_operand(*e, std::move(right));
    return e;
}

bool is_reserved(const std::string& name) {
    for (const char* word : {"and", "or", "not", "in", "is", "if", "else"}) {
        if (name == word) return true;
    }
    return false;
}

std::string describe(const Token& t) {
    switch (t.type) {
        case TokenType::End: return "end of template";
        case TokenType::BlockEnd: return "end of tag '%}'";
        case TokenType::VariableEnd: return "end of expression '}}'";
        case TokenType::String: return "string '" + t.text + "'";
        case TokenType::Text: return "text";
        default: return "'" + t.text + "'";
    }
}

class Parser {
public:
    explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

    // Counts the parser's own recursion (parentheses, unary chains, nested tags).
    class NestingGuard {
    public:
        NestingGuard(Parser& parser, int line) : parser_(parser) {
            if (++parser_.nesting_ > kMaxNesting) {
                --parser_.nesting_;
                throw TemplateError("template nested more than " + std::to_string(kMaxNesting) + " levels deep", line);
            }
        }
        ~NestingGuard() { --parser_.nesting_; }
        NestingGuard(const NestingGuard&) = delete;
        NestingGuard& operator=(const NestingGuard&) = delete;

    private:
        Parser& parser_;
    };

    // Nodes up to one of the `terminators` block tags (left unconsumed), or to the end of the
    // template when there are none.
    NodeList parse_body(std::initializer_list<const char*> terminators) {
        NodeList nodes;
        while (true) {
            const Token& t = peek();
            if (t.type == TokenType::End) {
                if (terminators.size() == 0) return nodes;
                throw TemplateError("unexpected end of template: missing {% " + std::string(*(terminators.end() - 1)) + " %}", t.line);
            }
            if (t.type == TokenType::Text) {
                auto node = make_node(Node::Kind::Text, t.line);
                node->text = next().text;
                nodes.push_back(std::move(node));
            } else if (t.type == TokenType::VariableBegin) {
                auto node = make_node(Node::Kind::Output, next().line);
                node->expr = parse_expression();
                expect(TokenType::VariableEnd);
                nodes.push_back(std::move(node));
            } else {
                const Token& keyword = peek(1);
                const bool ends = std::any_of(terminators.begin(), terminators.end(), [&](const char* name) { return keyword.text == name; });
                if (keyword.type == TokenType::Name && ends) return nodes;
                nodes.push_back(parse_statement());
            }
        }
    }

private:
    const Token& peek(size_t ahead = 0) const { return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)]; }
    const Token& next() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
    bool at_op(const char* op, size_t ahead = 0) const { return peek(ahead).type == TokenType::Operator && peek(ahead).text == op; }
    bool at_name(const char* name, size_t ahead = 0) const { return peek(ahead).type == TokenType::Name && peek(ahead).text == name; }
    bool accept_op(const char* op) { return at_op(op) ? (next(), true) : false; }
    bool accept_name(const char* name) { return at_name(name) ? (next(), true) : false; }

    [[noreturn]] void fail_unexpected(const std::string& wanted) const {
        throw TemplateError("expected " + wanted + ", found " + describe(peek()), peek().line);
    }
    void expect(TokenType type) {
        if (peek().type != type) fail_unexpected(type == TokenType::BlockEnd ? "'%}'" : "'}}'");
        next();
    }
    void expect_op(const char* op) {
        if (!accept_op(op)) fail_unexpected(std::string("'") + op + "'");
    }
    void expect_name(const char* name) {
        if (!accept_name(name)) fail_unexpected(std::string("'") + name + "'");
    }
    std::string expect_identifier() {
        if (peek().type != TokenType::Name || is_reserved(peek().text)) fail_unexpected("a name");
        return next().text;
    }
    // {% end... %} of a block statement.
    void expect_end_tag(const char* name) {
        expect(TokenType::BlockBegin);
        expect_name(name);
        expect(TokenType::BlockEnd);
    }

    static std::unique_ptr<Node> make_node(Node::Kind kind, int line) {
        auto node = std::make_unique<Node>();
        node->kind = kind;
        node->line = line;
        return node;
    }

    std::unique_ptr<Node> parse_statement() {
        const NestingGuard guard(*this, peek().line);
        next();  // {%
        const Token& keyword = peek();
        if (keyword.type != TokenType::Name) fail_unexpected("a statement name");
        const std::string name = next().text;
        if (name == "if") return parse_if(keyword.line);
        if (name == "for") return parse_for(keyword.line);
        if (name == "set") return parse_set(keyword.line);
        if (name == "macro") return parse_macro(keyword.line);
        if (name == "break" || name == "continue") {
            expect(TokenType::BlockEnd);
            return make_node(name == "break" ? Node::Kind::Break : Node::Kind::Continue, keyword.line);
        }
        if (name == "generation") {
            expect(TokenType::BlockEnd);
            auto node = make_node(Node::Kind::Generation, keyword.line);
            node->body = parse_body({"endgeneration"});
            expect_end_tag("endgeneration");
            return node;
        }
        for (const char* known : {"extends", "include", "import", "from", "block", "call", "filter", "with", "do", "autoescape", "trans"}) {
            if (name == known) throw TemplateError("unsupported template tag '" + name + "'", keyword.line);
        }
        throw TemplateError("unknown or misplaced template tag '" + name + "'", keyword.line);
    }

    std::unique_ptr<Node> parse_if(int line) {
        auto node = make_node(Node::Kind::If, line);
        ExprPtr condition = parse_expression();
        while (true) {
            expect(TokenType::BlockEnd);
            IfBranch branch{std::move(condition), parse_body({"elif", "else", "endif"})};
            node->branches.push_back(std::move(branch));
            expect(TokenType::BlockBegin);
            const std::string tag = next().text;
            if (tag == "endif") break;
            if (tag == "elif") {
                condition = parse_expression();
                continue;
            }
            expect(TokenType::BlockEnd);
            node->branches.push_back(IfBranch{nullptr, parse_body({"endif"})});
            expect_end_tag("endif");
            return node;
        }
        expect(TokenType::BlockEnd);
        return node;
    }

    std::vector<std::string> parse_targets() {
        std::vector<std::string> names{expect_identifier()};
        while (accept_op(",")) names.push_back(expect_identifier());
        return names;
    }

    std::unique_ptr<Node> parse_for(int line) {
        auto node = make_node(Node::Kind::For, line);
        node->targets = parse_targets();
        expect_name("in");
        node->expr = parse_tuple_or_expression(false);
        if (accept_name("if")) node->condition = parse_expression();
        if (at_name("recursive")) throw TemplateError("unsupported: recursive for loops", line);
        expect(TokenType::BlockEnd);
        node->body = parse_body({"else", "endfor"});
        if (at_name("else", 1)) {
            next();
            next();
            expect(TokenType::BlockEnd);
            node->else_body = parse_body({"endfor"});
        }
        expect_end_tag("endfor");
        return node;
    }

    std::unique_ptr<Node> parse_set(int line) {
        auto node = make_node(Node::Kind::Set, line);
        node->targets = parse_targets();
        if (node->targets.size() == 1 && accept_op(".")) node->attribute = expect_identifier();
        if (peek().type == TokenType::BlockEnd && node->attribute.empty() && node->targets.size() == 1) {
            next();
            node->kind = Node::Kind::SetBlock;
            node->body = parse_body({"endset"});
            expect_end_tag("endset");
            return node;
        }
        expect_op("=");
        node->expr = parse_tuple_or_expression(true);
        expect(TokenType::BlockEnd);
        return node;
    }

    std::unique_ptr<Node> parse_macro(int line) {
        auto node = make_node(Node::Kind::Macro, line);
        node->name = expect_identifier();
        expect_op("(");
        while (!accept_op(")")) {
            if (!node->params.empty()) expect_op(",");
            if (accept_op(")")) break;
            MacroParam param{expect_identifier(), nullptr};
            if (accept_op("=")) param.default_value = parse_expression();
            node->params.push_back(std::move(param));
        }
        expect(TokenType::BlockEnd);
        node->body = parse_body({"endmacro"});
        expect_end_tag("endmacro");
        return node;
    }

    // `a, b` without brackets is a tuple where jinja2 allows one: after `in` and `=`.
    ExprPtr parse_tuple_or_expression(bool allow_conditional) {
        const int line = peek().line;
        ExprPtr first = allow_conditional ? parse_expression() : parse_or();
        if (!at_op(",")) return first;
        ExprPtr tuple = make_expr(Expr::Kind::Tuple, line);
        add_operand(*tuple, std::move(first));
        while (accept_op(",")) {
            if (peek().type == TokenType::BlockEnd) break;
            add_operand(*tuple, allow_conditional ? parse_expression() : parse_or());
        }
        return tuple;
    }

public:
    ExprPtr parse_expression() {
        const NestingGuard guard(*this, peek().line);
        ExprPtr value = parse_or();
        while (at_name("if")) {
            const int line = next().line;
            ExprPtr e = make_expr(Expr::Kind::Conditional, line);
            add_operand(*e, std::move(value));
            add_operand(*e, parse_or());
            add_operand(*e, accept_name("else") ? parse_expression() : nullptr);
            value = std::move(e);
        }
        return value;
    }

private:
    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (at_name("or")) {
            const int line = next().line;
            left = make_binary("or", std::move(left), parse_and(), line);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (at_name("and")) {
            const int line = next().line;
            left = make_binary("and", std::move(left), parse_not(), line);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (!at_name("not")) return parse_compare();
        ExprPtr e = make_expr(Expr::Kind::Unary, next().line, "not");
        add_operand(*e, parse_not());
        return e;
    }

    ExprPtr parse_compare() {
        ExprPtr left = parse_math1();
        bool compared = false;
        while (true) {
            std::string op;
            const int line = peek().line;
            if (peek().type == TokenType::Operator && (at_op("==") || at_op("!=") || at_op("<") || at_op(">") || at_op("<=") || at_op(">="))) {
                op = next().text;
            } else if (accept_name("in")) {
                op = "in";
            } else if (at_name("not") && at_name("in", 1)) {
                next();
                next();
                op = "not in";
            } else {
                return left;
            }
            if (compared) throw TemplateError("unsupported: chained comparison (write a < b and b < c)", line);
            compared = true;
            left = make_binary(op, std::move(left), parse_math1(), line);
        }
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (at_op("+") || at_op("-")) {
            const Token& op = next();
            left = make_binary(op.text, std::move(left), parse_concat(), op.line);
        }
        return left;
    }

    ExprPtr parse_concat() {
        ExprPtr left = parse_math2();
        while (at_op("~")) {
            const int line = next().line;
            left = make_binary("~", std::move(left), parse_math2(), line);
        }
        return left;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
            const Token& op = next();
            left = make_binary(op.text, std::move(left), parse_pow(), op.line);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (at_op("**")) {
            const int line = next().line;
            left = make_binary("**", std::move(left), parse_unary(true), line);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filters) {
        const NestingGuard guard(*this, peek().line);
        ExprPtr node;
        if (at_op("-") || at_op("+")) {
            const Token& op = next();
            node = make_expr(Expr::Kind::Unary, op.line, op.text);
            add_operand(*node, parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        return with_filters ? parse_filters_and_tests(std::move(node)) : std::move(node);
    }

    ExprPtr parse_primary() {
        const Token& t = peek();
        switch (t.type) {
            case TokenType::Name: return parse_name();
            case TokenType::String: {
                ExprPtr e = make_expr(Expr::Kind::Literal, t.line);
                std::string text;
                while (peek().type == TokenType::String) text += next().text;  // "a" "b" is "ab"
                e->literal = Value(std::move(text));
                return e;
            }
            case TokenType::Integer: {
                ExprPtr e = make_expr(Expr::Kind::Literal, t.line);
                e->literal = integer_literal(next());
                return e;
            }
            case TokenType::Float: {
                ExprPtr e = make_expr(Expr::Kind::Literal, t.line);
                // strtod, not stod: out of range saturates to inf or 0 as Python's float() does.
                e->literal = Value(std::strtod(next().text.c_str(), nullptr));
                return e;
            }
            default: break;
        }
        if (at_op("(")) return parse_parenthesized();
        if (at_op("[")) return parse_list();
        if (at_op("{")) return parse_dict();
        fail_unexpected("an expression");
    }

    ExprPtr parse_name() {
        const Token& t = next();
        ExprPtr e = make_expr(Expr::Kind::Literal, t.line);
        if (t.text == "true" || t.text == "True") e->literal = Value(true);
        else if (t.text == "false" || t.text == "False") e->literal = Value(false);
        else if (t.text == "none" || t.text == "None") e->literal = Value(None{});
        else if (is_reserved(t.text)) throw TemplateError("expected an expression, found '" + t.text + "'", t.line);
        else e = make_expr(Expr::Kind::Name, t.line, t.text);
        return e;
    }

    ExprPtr parse_parenthesized() {
        const int line = next().line;
        if (accept_op(")")) return make_expr(Expr::Kind::Tuple, line);
        ExprPtr first = parse_expression();
        if (accept_op(")")) return first;
        ExprPtr tuple = make_expr(Expr::Kind::Tuple, line);
        add_operand(*tuple, std::move(first));
        while (accept_op(",")) {
            if (at_op(")")) break;
            add_operand(*tuple, parse_expression());
        }
        expect_op(")");
        return tuple;
    }

    ExprPtr parse_list() {
        ExprPtr list = make_expr(Expr::Kind::List, next().line);
        while (!accept_op("]")) {
            if (!list->operands.empty()) expect_op(",");
            if (accept_op("]")) break;
            add_operand(*list, parse_expression());
        }
        return list;
    }

    ExprPtr parse_dict() {
        ExprPtr dict = make_expr(Expr::Kind::Dict, next().line);
        while (!accept_op("}")) {
            if (!dict->operands.empty()) expect_op(",");
            if (accept_op("}")) break;
            add_operand(*dict, parse_expression());
            expect_op(":");
            add_operand(*dict, parse_expression());
        }
        return dict;
    }

    static Value integer_literal(const Token& digits) {
        const std::optional<int64_t> value = parse_decimal_int64(digits.text);
        if (!value) throw TemplateError("integer literal too large: " + digits.text.substr(0, 40), digits.line);
        return Value(*value);
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (at_op(".")) {
                const int line = next().line;
                const Token& attr = next();
                if (attr.type != TokenType::Name && attr.type != TokenType::Integer) fail_unexpected("an attribute name");
                ExprPtr e = make_expr(attr.type == TokenType::Name ? Expr::Kind::Attribute : Expr::Kind::Subscript, line, attr.text);
                add_operand(*e, std::move(node));
                if (attr.type == TokenType::Integer) {
                    add_operand(*e, make_expr(Expr::Kind::Literal, line));
                    e->operands.back()->literal = integer_literal(attr);
                }
                node = std::move(e);
            } else if (at_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr target) {
        const int line = next().line;
        ExprPtr start = at_op(":") ? nullptr : parse_expression();
        if (accept_op("]")) {
            ExprPtr e = make_expr(Expr::Kind::Subscript, line);
            add_operand(*e, std::move(target));
            add_operand(*e, std::move(start));
            return e;
        }
        ExprPtr e = make_expr(Expr::Kind::Slice, line);
        add_operand(*e, std::move(target));
        add_operand(*e, std::move(start));
        expect_op(":");
        add_operand(*e, at_op(":") || at_op("]") ? nullptr : parse_expression());
        ExprPtr step;
        if (accept_op(":") && !at_op("]")) step = parse_expression();
        add_operand(*e, std::move(step));
        expect_op("]");
        return e;
    }

    // The arguments of a call, filter or test, from "(" to ")", into `e`.
    void parse_arguments(Expr& e) {
        expect_op("(");
        bool first = true;
        while (!accept_op(")")) {
            if (!first) expect_op(",");
            first = false;
            if (accept_op(")")) break;
            if (at_op("*") || at_op("**")) throw TemplateError("unsupported: *args and **kwargs in calls", peek().line);
            if (peek().type == TokenType::Name && at_op("=", 1)) {
                std::string name = next().text;
                next();
                ExprPtr value = parse_expression();
                e.depth = std::max(e.depth, value->depth + 1);
                e.keywords.push_back({std::move(name), std::move(value)});
            } else {
                if (!e.keywords.empty()) throw TemplateError("positional argument after a keyword argument", peek().line);
                add_operand(e, parse_expression());
            }
        }
    }

    ExprPtr parse_call(ExprPtr callee) {
        ExprPtr e = make_expr(Expr::Kind::Call, peek().line);
        add_operand(*e, std::move(callee));
        parse_arguments(*e);
        return e;
    }

    ExprPtr parse_filters_and_tests(ExprPtr node) {
        while (true) {
            if (at_op("|")) {
                const int line = next().line;
                ExprPtr e = make_expr(Expr::Kind::Filter, line, expect_identifier());
                if (!has_filter(e->name)) throw TemplateError("no filter named '" + e->name + "'", line);
                add_operand(*e, std::move(node));
                if (at_op("(")) parse_arguments(*e);
                node = std::move(e);
            } else if (at_name("is")) {
                node = parse_test(std::move(node));
            } else if (at_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_test(ExprPtr subject) {
        const int line = next().line;
        const bool negated = accept_name("not");
        const Token& name = next();
        if (name.type != TokenType::Name) throw TemplateError("expected a test name after 'is', found " + describe(name), name.line);
        ExprPtr e = make_expr(Expr::Kind::Test, line, name.text);
        if (!has_test(name.text)) throw TemplateError("no test named '" + name.text + "'", name.line);
        e->negated = negated;
        add_operand(*e, std::move(subject));
        const Token& t = peek();
        const bool argument_follows = t.type == TokenType::String || t.type == TokenType::Integer || t.type == TokenType::Float ||
                                      at_op("[") || at_op("{") ||
                                      (t.type == TokenType::Name && t.text != "else" && t.text != "or" && t.text != "and");
        if (at_op("(")) {
            parse_arguments(*e);
        } else if (argument_follows) {
            add_operand(*e, parse_postfix(parse_primary()));
        }
        return e;
    }

    const std::vector<Token>& tokens_;
    size_t pos_ = 0;
    int nesting_ = 0;
};

}  // namespace

NodeList parse_template(const std::vector<Token>& tokens) { return Parser(tokens).parse_body({}); }

}  // namespace inferscope::chat
