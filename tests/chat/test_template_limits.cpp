// A chat template comes from a model file: whatever it says, rendering ends with a result
// or a TemplateError naming the limit it hit, never a crash, a hang or an exhausted memory.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/core/error.h"

namespace inferscope::chat {
namespace {

std::string repeated(const std::string& piece, int times) {
    std::string out;
    for (int i = 0; i < times; ++i) out += piece;
    return out;
}

void expect_refused(const std::string& source, const std::string& message) {
    try {
        ChatTemplate(source).render(ChatTemplateInputs{});
        FAIL() << "expected a TemplateError containing: " << message;
    } catch (const TemplateError& e) {
        EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
}

TEST(TemplateLimits, DeepNestingIsRefusedBeforeItExhaustsTheStack) {
    expect_refused("{{" + repeated("(", 100000) + "1" + repeated(")", 100000) + "}}", "nested more than 200 levels");
    expect_refused("{{ " + repeated("-", 100000) + "1 }}", "nested more than 200 levels");
    expect_refused(repeated("{% if true %}", 20000) + "x" + repeated("{% endif %}", 20000), "nested more than 200 levels");
    expect_refused("{{ x" + repeated("[0]", 100000) + " }}", "expression nested more than 200 levels");
    expect_refused("{{ 1" + repeated(" + 1", 100000) + " }}", "expression nested more than 200 levels");
    // Within the limit, deep expressions still work.
    EXPECT_EQ(ChatTemplate("{{ 1" + repeated(" + 1", 150) + " }}").render(ChatTemplateInputs{}), "151");
}

TEST(TemplateLimits, RunawayRenderingStops) {
    expect_refused("{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}", "calls nest more than 64 levels");
    expect_refused("{{ range(10**12)|length }}", "range() of 1000000000000 items");
    expect_refused("{{ [0] * 2000000 }}", "makes more than 1048576 items");
    expect_refused("{{ [[0] * 1000000] * 1000000 }}", "a string of more than 64 MiB");
    expect_refused("{{ ([[0] * 1000000] * 1000)|string|length }}", "a string of more than 64 MiB");
    expect_refused("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
                   "a string of more than 64 MiB");
    expect_refused("{{ ('x' * 10**10)|length }}", "times makes more than 67108864 bytes");
    expect_refused("{% for i in range(1000000) %}{% for j in range(1000000) %}{% endfor %}{% endfor %}",
                   "more than 1000000 steps");
    expect_refused("{{ 'a'|indent(10**12) }}", "wider than 4096");
    // A huge exponent is computed by squaring, not by 10**18 steps, and overflows at once.
    EXPECT_EQ(ChatTemplate("{{ 3 ** 4 }}").render(ChatTemplateInputs{}), "81");
    expect_refused("{{ 2 ** 10**18 }}", "integer overflow");
}

TEST(TemplateLimits, IntegersPastInt64AreErrorsOrMisses) {
    expect_refused("{{ 99999999999999999999 }}", "integer literal too large: 99999999999999999999");
    expect_refused("{{ x.99999999999999999999 }}", "integer literal too large");
    // An attribute path with a number past int64 finds no element, as in jinja2.
    ChatTemplateInputs inputs;
    inputs.messages = nlohmann::ordered_json::parse(R"([{"role":"user","content":"Hi"}])");
    EXPECT_EQ(ChatTemplate("{{ messages|map(attribute='99999999999999999999')|list|length }}").render(inputs), "1");
    EXPECT_EQ(ChatTemplate("{{ [[5]]|map(attribute='0.99999999999999999999')|select|list }}").render(inputs), "[]");
    EXPECT_EQ(ChatTemplate("{% set x = [1] %}{{ x.9223372036854775807 is defined }}").render(inputs), "False");
}

TEST(TemplateLimits, IntegerArithmeticPast64BitsIsAnErrorNotAWrap) {
    expect_refused("{{ 5555555447 * 5545450908 }}", "integer overflow: 5555555447 * 5545450908 does not fit in 64 bits");
    expect_refused("{{ 9223372036854775807 + 1 }}", "integer overflow");
    expect_refused("{{ -9223372036854775807 - 2 }}", "integer overflow");
    expect_refused("{{ (-9223372036854775807 - 1) // -1 }}", "integer overflow");
    expect_refused("{{ -(-9223372036854775807 - 1) }}", "integer overflow");
    expect_refused("{{ [9223372036854775807, 1]|sum }}", "integer overflow");
    const ChatTemplateInputs none;
    EXPECT_EQ(ChatTemplate("{{ -9223372036854775807 - 1 }}").render(none), "-9223372036854775808");
    EXPECT_EQ(ChatTemplate("{{ (-9223372036854775807 - 1) % -1 }}").render(none), "0");
    // range() near the ends of int64 gives the same lists as jinja2's.
    EXPECT_EQ(ChatTemplate("{{ range(9223372036854775806, 9223372036854775807, 5)|list }}").render(none),
              "[9223372036854775806]");
    EXPECT_EQ(ChatTemplate("{{ range(-9223372036854775807, 9223372036854775807, 9223372036854775807)|list }}").render(none),
              "[-9223372036854775807, 0]");
    EXPECT_EQ(ChatTemplate("{{ range(10, 0, -3)|list }}").render(none), "[10, 7, 4, 1]");
    // Floats past int64 and abs() of its smallest value.
    expect_refused("{{ 1e300|int }}", "integer overflow: int(1e+300) does not fit in 64 bits");
    expect_refused("{{ '1e300'|int }}", "integer overflow");
    expect_refused("{{ (-9223372036854775807 - 1)|abs }}", "integer overflow");
    EXPECT_EQ(ChatTemplate("{{ (-2.5)|int }}|{{ -7|abs }}|{{ 7|abs }}|{{ [1, 2, 3][1::9223372036854775807] }}").render(none),
              "-2|7|7|[2]");
    // Extreme precisions and divisors give the same results as jinja2's.
    EXPECT_EQ(ChatTemplate("{{ 2.5|round(1000000000) }}|{{ 1234.5|round(-1000) }}|{{ (-1234.5)|round(-1000) }}|"
                           "{{ (-9223372036854775807 - 1) is divisibleby(-1) }}|{{ 7 is divisibleby(-1) }}")
                  .render(none),
              "2.5|0.0|-0.0|True|True");
}

// Every filter, test, method and global called with every kind of value as its subject and
// arguments renders or fails with a TemplateError; no other exception escapes.
TEST(TemplateLimits, EveryCallableTakesEveryKindOfArgumentWithoutCrashing) {
    const std::vector<std::string> values = {"'ab'", "2.5", "-3", "true", "none", "[1, 'x']", "{'a': 1}", "undefined_name", "range"};
    const std::vector<std::string> filters = {
        "trim", "upper", "lower", "title", "capitalize", "escape", "safe", "string", "replace", "tojson", "length",
        "count", "join", "first", "last", "default", "list", "items", "selectattr", "rejectattr", "select", "reject",
        "map", "unique", "sort", "reverse", "abs", "round", "int", "float", "indent", "min", "max", "sum", "attr"};
    const std::vector<std::string> tests = {"defined", "none", "string", "number", "integer", "mapping", "iterable",
                                            "sequence", "callable", "odd", "even", "divisibleby", "in", "sameas",
                                            "equalto", "le", "lower", "upper"};
    const std::vector<std::string> methods = {
        "capitalize", "count", "endswith", "find", "format", "get", "isalnum", "isdigit", "items", "join", "keys", "lower",
        "lstrip", "removeprefix", "removesuffix", "replace", "rfind", "rstrip", "split", "splitlines", "startswith",
        "strip", "title", "upper", "values"};
    const std::vector<std::string> globals = {"range", "namespace", "dict", "raise_exception", "strftime_now"};
    // Each template with the "no filter/test named" message that would mean its own callable
    // is missing from the engine (and so untested).
    std::vector<std::pair<std::string, std::string>> sources;
    for (const std::string& subject : values) {
        for (const std::string& arg : values) {
            for (const std::string& f : filters) {
                const std::string missing = "no filter named '" + f + "'";
                sources.push_back({"{{ " + subject + "|" + f + "(" + arg + ") }}", missing});
                sources.push_back({"{{ " + subject + "|" + f + "(" + arg + ", " + subject + ") }}", missing});
            }
            for (const std::string& t : tests) {
                sources.push_back({"{{ " + subject + " is " + t + "(" + arg + ") }}", "no test named '" + t + "'"});
            }
            for (const std::string& m : methods) {
                sources.push_back({"{{ " + subject + "." + m + "(" + arg + ") }}", ""});
                sources.push_back({"{{ " + subject + "." + m + "(" + arg + ", " + subject + ") }}", ""});
            }
        }
        for (const std::string& g : globals) sources.push_back({"{{ " + g + "(" + subject + ", " + subject + ") }}", ""});
    }
    size_t rendered = 0;
    size_t refused = 0;
    for (const auto& [source, missing] : sources) {
        try {
            ChatTemplate(source).render(ChatTemplateInputs{});
            ++rendered;
        } catch (const TemplateError& e) {
            ++refused;
            if (!missing.empty() && std::string(e.what()).find(missing) != std::string::npos) ADD_FAILURE() << source << ": " << e.what();
        } catch (const std::exception& e) {
            ADD_FAILURE() << source << " threw something other than a TemplateError: " << e.what();
        }
    }
    // Both outcomes occur, so the sweep exercises real calls and real refusals.
    EXPECT_GT(rendered, 1000u);
    EXPECT_GT(refused, 1000u);
}

// Floor division and modulo near the ends of int64 are exact (checked against jinja2).
TEST(TemplateLimits, FloorDivisionAndModuloNearInt64LimitsAreExact) {
    EXPECT_EQ(ChatTemplate("{{ 9223372036854775807 % -5013134498661299007 }}|{{ -9223372036854775807 % 5013134498661299007 }}|"
                           "{{ 7 % -2 }}|{{ -7 % 2 }}|{{ -7 // 2 }}|{{ 9223372036854775807 // -5013134498661299007 }}")
                  .render(ChatTemplateInputs{}),
              "-802896960467822207|802896960467822207|-1|1|-4|-2");
}

// Powers are exact up to int64 (checked against jinja2) and an error past it, as + - * are.
TEST(TemplateLimits, IntegerPowersAreExactOrAnOverflowError) {
    EXPECT_EQ(ChatTemplate("{{ 2 ** 62 }}|{{ (-2) ** 63 }}|{{ 3 ** 39 }}|{{ 1 ** 9223372036854775807 }}|"
                           "{{ (-1) ** 9223372036854775807 }}|{{ 0 ** 0 }}")
                  .render(ChatTemplateInputs{}),
              "4611686018427387904|-9223372036854775808|4052555153018976267|1|-1|1");
    expect_refused("{{ 2 ** 63 }}", "integer overflow: 2 ** 63 does not fit in 64 bits");
    expect_refused("{{ 3 ** 40 }}", "integer overflow: 3 ** 40");
}

// An empty string or list repeated any number of times is empty at once, not after a loop of
// that many steps (a fuzzed template repeated an empty list 5.5e9 times).
TEST(TemplateLimits, AnEmptySequenceRepeatedIsEmpty) {
    EXPECT_EQ(ChatTemplate("{{ ([] * 9000000000000000000)|length }}|{{ '' * 9000000000000000000 }}|{{ [1] * 0 }}")
                  .render(ChatTemplateInputs{}),
              "0||[]");
}

// A value of the wrong kind met inside a filter is reported at the filter's line, by name.
TEST(TemplateLimits, AWrongKindInsideACallableNamesTheCallableAndLine) {
    expect_refused("\n\n{{ 'ab'|indent(2.5) }}", "template line 3: filter indent: expected an integer, got float object");
    expect_refused("{{ 2.5|round(1.5) }}", "template line 1: filter round: expected an integer, got float object");
    expect_refused("{{ 2.5|round(precision=1.5) }}", "filter round: expected an integer");
}

}  // namespace
}  // namespace inferscope::chat
