#pragma once
// Splits template source into tokens: literal text, the delimiters of {{ }} and {% %}, and the
// names, literals and operators inside them. Comments are dropped. Whitespace control is applied
// here, as jinja2 does with trim_blocks=True and lstrip_blocks=True (transformers' settings):
//   {%- / {{- / {#-   strip all whitespace before the tag;  -%} / -}} / -#}  strip all after it;
//   lstrip_blocks     spaces and tabs between a line start and {% or {# go (not before {{);
//                     {%+ keeps them;
//   trim_blocks       the first newline after %} or #} goes; +%} keeps it.
// The source's newlines are normalised to \n and one trailing newline is dropped, as jinja2 does
// by default (keep_trailing_newline=False).
#include <string>
#include <vector>

namespace inferscope::chat {

enum class TokenType { Text, VariableBegin, VariableEnd, BlockBegin, BlockEnd, Name, String, Integer, Float, Operator, End };

struct Token {
    TokenType type;
    std::string text;  // the text, the name, the decoded string literal, the number or the operator
    int line;          // 1-based line of the source where the token starts
};

// Throws TemplateError (naming the line) for an unterminated tag, comment or string, or a
// character that is no token.
std::vector<Token> tokenize_template(const std::string& source);

}  // namespace inferscope::chat
