#!/usr/bin/env python3
"""Renders chat-template cases with Python jinja2 the way transformers' apply_chat_template does,
as the oracle of tests/chat: ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
with loop controls, tojson as json.dumps(ensure_ascii=False), raise_exception(msg) and
strftime_now(fmt) fixed to 3 Dec 2026.

Usage: jinja2_oracle.py CASES.json OUT.json
CASES.json is a list of {"template": text, "variables": {...}}; OUT.json gets, for each case,
{"text": rendered} or {"error": message}.
"""
import datetime
import json
import sys

from jinja2.exceptions import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

FIXED_NOW = datetime.datetime(2026, 12, 3, 12, 0, 0)


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def render(case):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: FIXED_NOW.strftime(fmt)
    try:
        return {"text": env.from_string(case["template"]).render(**case["variables"])}
    except Exception as e:  # the test compares messages, whatever the error type
        return {"error": str(e)}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        json.dump([render(c) for c in cases], f, ensure_ascii=False)


if __name__ == "__main__":
    main()
