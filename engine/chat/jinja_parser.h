#pragma once
// The syntax tree of a template and the parser that builds it from tokens. Anything outside the
// supported subset (extends, include, call blocks, {% do %}, ...) is rejected here, by name and
// line, rather than rendered wrongly.
#include <memory>
#include <string>
#include <vector>

#include "engine/chat/jinja_lexer.h"
#include "engine/chat/jinja_value.h"

namespace inferscope::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct KeywordArg {
    std::string name;
    ExprPtr value;
};

struct Expr {
    enum class Kind {
        Literal,      // literal
        Name,         // name
        List,         // operands: the items
        Tuple,        // operands: the items (a tuple evaluates to a list)
        Dict,         // operands: key, value, key, value, ...
        Attribute,    // operands[0].name
        Subscript,    // operands[0][operands[1]]
        Slice,        // operands[0][operands[1]:operands[2]:operands[3]], a null operand is omitted
        Call,         // operands[0](operands[1..], keywords)
        Filter,       // operands[0] | name(operands[1..], keywords)
        Test,         // operands[0] is [not] name(operands[1..]); negated for "is not"
        Unary,        // name is "not", "-" or "+"; operands[0]
        Binary,       // operands[0] name operands[1]; name is the operator, "and", "or", "in", "not in"
        Conditional,  // operands[0] if operands[1] else operands[2] (absent else: undefined)
    };
    Kind kind;
    int line = 0;
    std::string name;
    Value literal;
    std::vector<ExprPtr> operands;  // a null entry marks an omitted slice bound
    int depth = 1;                  // levels of operands below and including this one
    std::vector<KeywordArg> keywords;
    bool negated = false;
};

struct Node;
using NodeList = std::vector<std::unique_ptr<Node>>;

struct IfBranch {
    ExprPtr condition;  // null for else
    NodeList body;
};

struct MacroParam {
    std::string name;
    ExprPtr default_value;  // null when the parameter is required
};

struct Node {
    enum class Kind {
        Text,        // text
        Output,      // {{ expr }}
        If,          // branches
        For,         // for targets in expr [if condition]: body, else_body
        Set,         // set targets = expr, or set targets[0].attribute = expr (a namespace)
        SetBlock,    // set targets[0] %}body{% endset
        Macro,       // macro name(params): body
        Break,
        Continue,
        Generation,  // transformers' {% generation %}: the body renders as it is
    };
    Kind kind;
    int line = 0;
    std::string text;
    ExprPtr expr;
    ExprPtr condition;
    std::vector<std::string> targets;
    std::string attribute;
    std::string name;
    std::vector<MacroParam> params;
    std::vector<IfBranch> branches;
    NodeList body;
    NodeList else_body;
};

// Throws TemplateError naming the line for malformed or unsupported syntax.
NodeList parse_template(const std::vector<Token>& tokens);

}  // namespace inferscope::chat
