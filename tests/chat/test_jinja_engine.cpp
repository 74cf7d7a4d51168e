// The template engine's features one by one: whitespace control, loops, scoping, namespaces,
// macros, operators, printing, slices, tests, filters and methods. The expected strings were
// produced by Python jinja2 3.1 (tests/chat/jinja2_oracle.py, transformers' settings); the
// live-oracle test renders these same cases with jinja2 again when it is installed.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/chat_test_helpers.h"
#include "engine/chat/jinja_interpreter.h"
#include "engine/core/error.h"

namespace inferscope {
namespace {

std::string render_case(const nlohmann::ordered_json& c) {
    chat::ChatTemplateInputs inputs;
    inputs.extra_variables = c["variables"];
    inputs.now = testing::oracle_date();
    return chat::render_chat_template(c["template"].get<std::string>(), inputs);
}

TEST(JinjaEngine, EveryUnitCaseMatchesJinja2) {
    const nlohmann::ordered_json cases = testing::jinja_unit_cases();
    ASSERT_GE(cases.size(), 40u);
    for (const auto& c : cases) {
        SCOPED_TRACE(c["name"].get<std::string>());
        try {
            EXPECT_EQ(render_case(c), c["expected"].get<std::string>()) << c["template"].get<std::string>();
        } catch (const TemplateError& e) {
            ADD_FAILURE() << "threw: " << e.what();
        }
    }
}

// The message of a TemplateError the template throws, or "" when it renders.
std::string error_of(const std::string& template_text, const nlohmann::ordered_json& variables = nlohmann::ordered_json::object()) {
    chat::ChatTemplateInputs inputs;
    inputs.extra_variables = variables;
    try {
        chat::render_chat_template(template_text, inputs);
    } catch (const TemplateError& e) {
        return e.what();
    }
    return "";
}

TEST(JinjaEngine, RaiseExceptionMessageIsExact) {
    EXPECT_EQ(error_of("a{{ raise_exception('Exact message: roles must alternate') }}b"), "Exact message: roles must alternate");
    EXPECT_EQ(error_of("{% if true %}\n  {{- raise_exception(\"x \" ~ 1) }}{% endif %}"), "x 1");
}

TEST(JinjaEngine, GemmaRefusesASystemMessageVerbatim) {
    INFERSCOPE_REQUIRE_SHARED_FILE("chat-templates/google-gemma-2-2b-it.jinja");
    const std::string text = testing::read_text_file(testing::shared_model("chat-templates/google-gemma-2-2b-it.jinja"));
    chat::ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::array({{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}}});
    try {
        chat::render_chat_template(text, inputs);
        FAIL() << "gemma rendered a system message";
    } catch (const TemplateError& e) {
        EXPECT_STREQ(e.what(), "System role not supported");
        EXPECT_EQ(e.line(), 0);
    }
}

// Errors name the problem and the line it is on.
void expect_error(const std::string& template_text, const std::string& fragment, int line) {
    try {
        chat::render_chat_template(template_text, {});
        ADD_FAILURE() << "no error for: " << template_text;
    } catch (const TemplateError& e) {
        EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what() << "\nfor: " << template_text;
        EXPECT_EQ(e.line(), line) << e.what();
        EXPECT_NE(std::string(e.what()).find("line " + std::to_string(line)), std::string::npos) << e.what();
    }
}

TEST(JinjaEngine, MalformedSyntaxIsReportedWithItsLine) {
    expect_error("text\n{% if x %}\nunclosed", "missing {% endif %}", 3);
    expect_error("line1\n{{ 1 + }}", "expected an expression", 2);
    expect_error("{% for %}{% endfor %}", "expected a name", 1);
    expect_error("a\nb\n{{ 'unterminated }}", "unterminated string", 3);
    expect_error("{{ x }", "unterminated tag", 1);
    expect_error("x\n{# comment", "unterminated comment", 2);
    expect_error("{% endfor %}", "misplaced template tag 'endfor'", 1);
    expect_error("{% if a %}{% endfor %}", "misplaced template tag 'endfor'", 1);
    expect_error("{{ 1 < 2 < 3 }}", "chained comparison", 1);
    expect_error("{{ a ; b }}", "unexpected character ';'", 1);
}

TEST(JinjaEngine, UnsupportedFeaturesAreNamed) {
    expect_error("\n{% extends 'base.html' %}", "unsupported template tag 'extends'", 2);
    expect_error("{% include 'x' %}", "unsupported template tag 'include'", 1);
    expect_error("{% do xs.append(1) %}", "unsupported template tag 'do'", 1);
    expect_error("{{ x | nosuchfilter }}", "no filter named 'nosuchfilter'", 1);
    expect_error("{{ x is nosuchtest }}", "no test named 'nosuchtest'", 1);
    expect_error("{% for x in xs recursive %}{% endfor %}", "recursive", 1);
    expect_error("{{ '{}'.format(1) }}", "str.format", 1);
    expect_error("{{ f(*args) }}", "*args", 1);
}

TEST(JinjaEngine, RenderingErrorsLikeJinja2) {
    expect_error("{{ foo.bar }}", "'foo' is undefined", 1);
    expect_error("\n{{ {'a': 1}.b.c }}", "'dict object' has no attribute 'b'", 2);
    expect_error("{{ 'a' + 1 }}", "unsupported operand type(s) for +: 'str' and 'int'", 1);
    expect_error("{{ missing + 'a' }}", "'missing' is undefined", 1);
    expect_error("{{ 1 // 0 }}", "division or modulo by zero", 1);
    expect_error("{% set x = 1 %}{% set x.a = 2 %}", "not a namespace", 1);
    expect_error("{{ 5() }}", "not callable", 1);
    expect_error("{% set a, b = [1] %}", "not enough values to unpack", 1);
}

TEST(JinjaEngine, ParsedTemplateRendersManyTimes) {
    const chat::ChatTemplate parsed("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}{{ eos_token if not add_generation_prompt }}");
    chat::ChatTemplateInputs inputs;
    inputs.messages = chat::chat_messages_json({{"user", "hi", nlohmann::ordered_json::object()}, {"assistant", "yo", {{"name", "bot"}}}});
    inputs.eos_token = "</s>";
    EXPECT_EQ(parsed.render(inputs), "user:hi;assistant:yo;</s>");
    inputs.add_generation_prompt = true;
    EXPECT_EQ(parsed.render(inputs), "user:hi;assistant:yo;");
    EXPECT_EQ(inputs.messages[1]["name"], "bot");
}

TEST(JinjaEngine, StrftimeNowUsesTheClockWhenNotFixed) {
    chat::ChatTemplateInputs inputs;
    const std::string year = chat::render_chat_template("{{ strftime_now('%Y') }}", inputs);
    ASSERT_EQ(year.size(), 4u);
    EXPECT_GE(std::stoi(year), 2025);
    inputs.now = testing::oracle_date();
    EXPECT_EQ(chat::render_chat_template("{{ strftime_now('%d %b %Y') }}", inputs), "03 Dec 2026");
}

}  // namespace
}  // namespace inferscope
