#include "engine/chat/jinja_lexer.h"

#include <array>
#include <cctype>
#include <string_view>

#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string normalise_newlines(const std::string& source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

class Lexer {
public:
    explicit Lexer(std::string source) : src_(std::move(source)) {}

    std::vector<Token> run() {
        while (pos_ < src_.size()) {
            const size_t tag = find_tag_start(pos_);
            std::string text = src_.substr(pos_, tag - pos_);
            const bool text_starts_line = pos_ == 0 || src_[pos_ - 1] == '\n';
            if (tag == src_.size()) {
                emit_text(std::move(text), pos_);
                break;
            }
            const char kind = src_[tag + 1];
            const char modifier = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
            if (modifier == '-') {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            } else if (kind != '{' && modifier != '+') {
                lstrip_block_indent(text, text_starts_line);
            }
            emit_text(std::move(text), pos_);
            const size_t body = tag + 2 + ((modifier == '-' || (modifier == '+' && kind != '{')) ? 1 : 0);
            if (kind == '#') {
                skip_comment(tag, body);
            } else {
                lex_tag(kind, tag, body);
            }
        }
        tokens_.push_back({TokenType::End, "", line_at(src_.size())});
        return std::move(tokens_);
    }

private:
    size_t find_tag_start(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
        }
        return src_.size();
    }

    int line_at(size_t position) {
        // Lines are counted incrementally: positions only move forward.
        for (; line_pos_ < position && line_pos_ < src_.size(); ++line_pos_) {
            if (src_[line_pos_] == '\n') ++line_;
        }
        return line_;
    }

    // lstrip_blocks: the indentation before a block tag that starts a line is not output.
    static void lstrip_block_indent(std::string& text, bool text_starts_line) {
        const size_t newline = text.rfind('\n');
        const size_t line_begin = newline == std::string::npos ? 0 : newline + 1;
        if (newline == std::string::npos && !text_starts_line) return;
        if (text.find_first_not_of(" \t", line_begin) != std::string::npos) return;
        text.erase(line_begin);
    }

    void emit_text(std::string text, size_t at) {
        if (!text.empty()) tokens_.push_back({TokenType::Text, std::move(text), line_at(at)});
    }

    // After a tag: "-" strips all following whitespace; trim_blocks drops one newline after %} and #}.
    void after_tag_end(size_t end, bool strip_all, bool keep_newline, bool is_block) {
        pos_ = end;
        if (strip_all) {
            while (pos_ < src_.size() && is_space(src_[pos_])) ++pos_;
        } else if (is_block && !keep_newline && pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
    }

    void skip_comment(size_t tag, size_t body) {
        const size_t close = src_.find("#}", body);
        if (close == std::string::npos) throw TemplateError("unterminated comment (missing #})", line_at(tag));
        const bool strip = close > body && src_[close - 1] == '-';
        after_tag_end(close + 2, strip, false, true);
    }

    void lex_tag(char kind, size_t tag, size_t body) {
        const int line = line_at(tag);
        const size_t first_token = tokens_.size();
        tokens_.push_back({kind == '{' ? TokenType::VariableBegin : TokenType::BlockBegin, "", line});
        const char closer = kind == '{' ? '}' : '%';
        int depth = 0;
        size_t i = body;
        while (true) {
            while (i < src_.size() && is_space(src_[i])) ++i;
            if (i >= src_.size()) throw TemplateError(std::string("unterminated tag (missing ") + closer + "})", line);
            if (depth == 0) {
                const std::string_view rest(src_.data() + i, src_.size() - i);
                const bool minus = rest.size() >= 3 && rest[0] == '-' && rest[1] == closer && rest[2] == '}';
                const bool plus = kind == '%' && rest.size() >= 3 && rest[0] == '+' && rest[1] == closer && rest[2] == '}';
                if (minus || plus || (rest.size() >= 2 && rest[0] == closer && rest[1] == '}')) {
                    tokens_.push_back({kind == '{' ? TokenType::VariableEnd : TokenType::BlockEnd, "", line_at(i)});
                    after_tag_end(i + ((minus || plus) ? 3 : 2), minus, plus, kind == '%');
                    break;
                }
            }
            i = lex_one(i, depth);
        }
        if (kind == '%' && tokens_.size() == first_token + 3 && tokens_[first_token + 1].type == TokenType::Name &&
            tokens_[first_token + 1].text == "raw") {
            tokens_.resize(first_token);
            lex_raw(line);
        }
    }

    // {% raw %}...{% endraw %}: the text in between is output as it is.
    void lex_raw(int line) {
        for (size_t at = src_.find("{%", pos_); at != std::string::npos; at = src_.find("{%", at + 2)) {
            size_t i = at + 2;
            const bool strip_before = i < src_.size() && src_[i] == '-';
            if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
            while (i < src_.size() && is_space(src_[i])) ++i;
            if (src_.compare(i, 6, "endraw") != 0) continue;
            i += 6;
            while (i < src_.size() && is_space(src_[i])) ++i;
            const bool strip_after = i < src_.size() && src_[i] == '-';
            if (strip_after) ++i;
            if (src_.compare(i, 2, "%}") != 0) continue;
            std::string text = src_.substr(pos_, at - pos_);
            if (strip_before) {
                while (!text.empty() && is_space(text.back())) text.pop_back();
            }
            emit_text(std::move(text), pos_);
            after_tag_end(i + 2, strip_after, false, true);
            return;
        }
        throw TemplateError("unterminated raw block (missing {% endraw %})", line);
    }

    size_t lex_one(size_t i, int& depth) {
        const int line = line_at(i);
        const char c = src_[i];
        if (is_name_start(c)) {
            size_t end = i;
            while (end < src_.size() && is_name_char(src_[end])) ++end;
            tokens_.push_back({TokenType::Name, src_.substr(i, end - i), line});
            return end;
        }
        if (is_digit(c)) return lex_number(i, line);
        if (c == '\'' || c == '"') return lex_string(i, line);
        static constexpr std::array<std::string_view, 6> kTwoChar = {"//", "**", "==", "!=", "<=", ">="};
        for (std::string_view op : kTwoChar) {
            if (src_.compare(i, 2, op) == 0) {
                tokens_.push_back({TokenType::Operator, std::string(op), line});
                return i + 2;
            }
        }
        if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
            throw TemplateError(std::string("unexpected character '") + c + "' in a tag", line);
        }
        if (c == '(' || c == '[' || c == '{') ++depth;
        if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
        tokens_.push_back({TokenType::Operator, std::string(1, c), line});
        return i + 1;
    }

    size_t lex_number(size_t i, int line) {
        std::string digits;
        size_t end = i;
        bool is_float = false;
        auto take_digits = [&] {
            while (end < src_.size() && (is_digit(src_[end]) || src_[end] == '_')) {
                if (src_[end] != '_') digits += src_[end];
                ++end;
            }
        };
        take_digits();
        if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
            is_float = true;
            digits += src_[end++];
            take_digits();
        }
        if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
            size_t exp = end + 1;
            if (exp < src_.size() && (src_[exp] == '+' || src_[exp] == '-')) ++exp;
            if (exp < src_.size() && is_digit(src_[exp])) {
                is_float = true;
                digits += src_.substr(end, exp - end);
                end = exp;
                take_digits();
            }
        }
        tokens_.push_back({is_float ? TokenType::Float : TokenType::Integer, digits, line});
        return end;
    }

    size_t lex_string(size_t i, int line) {
        const char quote = src_[i];
        std::string value;
        size_t j = i + 1;
        for (; j < src_.size() && src_[j] != quote; ++j) {
            if (src_[j] != '\\' || j + 1 >= src_.size()) {
                value += src_[j];
                continue;
            }
            j = decode_escape(j + 1, value);
        }
        if (j >= src_.size()) throw TemplateError("unterminated string literal", line);
        tokens_.push_back({TokenType::String, std::move(value), line});
        return j + 1;
    }

    // Python's string escapes; an unknown one keeps its backslash, as Python does.
    size_t decode_escape(size_t j, std::string& value) const {
        const char e = src_[j];
        switch (e) {
            case 'n': value += '\n'; return j;
            case 't': value += '\t'; return j;
            case 'r': value += '\r'; return j;
            case '0': value += '\0'; return j;
            case 'a': value += '\a'; return j;
            case 'b': value += '\b'; return j;
            case 'f': value += '\f'; return j;
            case 'v': value += '\v'; return j;
            case '\\': case '\'': case '"': value += e; return j;
            case '\n': return j;
            case 'x': case 'u': case 'U': {
                const size_t width = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
                if (j + width < src_.size() && src_.find_first_not_of("0123456789abcdefABCDEF", j + 1) >= j + 1 + width) {
                    append_utf8(value, static_cast<uint32_t>(std::stoul(src_.substr(j + 1, width), nullptr, 16)));
                    return j + width;
                }
                break;
            }
            default: break;
        }
        value += '\\';
        value += e;
        return j;
    }

    std::string src_;
    size_t pos_ = 0;
    size_t line_pos_ = 0;
    int line_ = 1;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize_template(const std::string& source) { return Lexer(normalise_newlines(source)).run(); }

}  // namespace inferscope::chat
