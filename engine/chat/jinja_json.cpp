// The tojson filter as transformers defines it: Python's json.dumps with ensure_ascii=False, so
// non-ASCII text passes through, and Python's separators and float spelling.
#include <cmath>
#include <cstdio>

#include "engine/chat/jinja_value.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

void append_json_string(std::string& out, const std::string& s) {
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char escaped[8];
                    std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
                    out += escaped;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
}

class JsonWriter {
public:
    JsonWriter(int indent, int line) : indent_(indent), line_(line) {}

    void write(std::string& out, const Value& value, int depth) const {
        check_template_string_size(out.size(), line_);
        switch (value.kind()) {
            case Value::Kind::None: out += "null"; return;
            case Value::Kind::Bool: out += value.as_bool() ? "true" : "false"; return;
            case Value::Kind::Int: out += std::to_string(value.as_int()); return;
            case Value::Kind::Float: out += float_text(value.as_double()); return;
            case Value::Kind::String: append_json_string(out, value.as_string()); return;
            case Value::Kind::List: write_list(out, value.as_list(), depth); return;
            case Value::Kind::Dict: write_dict(out, value.as_dict(), depth); return;
            default:
                throw TemplateError("tojson: Object of type " + value.type_name() + " is not JSON serializable", line_);
        }
    }

private:
    static std::string float_text(double v) {
        if (std::isnan(v)) return "NaN";
        if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
        return python_float_repr(v);
    }

    // What goes before an item: ", " on one line, or a newline and indentation (json.dumps with
    // an indent uses "," as item separator, so no trailing space).
    void separator(std::string& out, bool first, int depth) const {
        if (indent_ < 0) {
            if (!first) out += ", ";
            return;
        }
        if (!first) out += ',';
        new_line(out, depth);
    }

    void new_line(std::string& out, int depth) const {
        out += '\n';
        out.append(static_cast<size_t>(indent_ * depth), ' ');
    }

    void closing(std::string& out, int depth, char bracket) const {
        if (indent_ >= 0) new_line(out, depth);
        out += bracket;
    }

    void write_list(std::string& out, const ValueList& list, int depth) const {
        if (list.empty()) {
            out += "[]";
            return;
        }
        out += '[';
        for (size_t i = 0; i < list.size(); ++i) {
            separator(out, i == 0, depth + 1);
            write(out, list[i], depth + 1);
        }
        closing(out, depth, ']');
    }

    void write_dict(std::string& out, const ValueDict& dict, int depth) const {
        if (dict.size() == 0) {
            out += "{}";
            return;
        }
        out += '{';
        bool first = true;
        for (const auto& [key, item] : dict.items()) {
            separator(out, first, depth + 1);
            first = false;
            append_json_string(out, key);
            out += ": ";
            write(out, item, depth + 1);
        }
        closing(out, depth, '}');
    }

    int indent_;
    int line_;
};

}  // namespace

std::string python_json_dumps(const Value& value, int indent, int line) {
    std::string out;
    JsonWriter(indent, line).write(out, value, 0);
    return out;
}

}  // namespace inferscope::chat
