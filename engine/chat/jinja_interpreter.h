#pragma once
// A parsed template that renders with given variables, as jinja2 would render it with
// trim_blocks, lstrip_blocks and the default Undefined. Parsing happens once; render() may be
// called any number of times.
#include <string>

#include "engine/chat/jinja_parser.h"
#include "engine/chat/jinja_value.h"

namespace inferscope::chat {

class Template {
public:
    // Throws TemplateError for malformed or unsupported syntax.
    explicit Template(const std::string& source);

    // `variables` are the template's globals (functions too, as Function values); namespace(),
    // range() and dict() are always there. Throws TemplateError when rendering fails.
    std::string render(const ValueDict& variables) const;

private:
    NodeList nodes_;
};

}  // namespace inferscope::chat
