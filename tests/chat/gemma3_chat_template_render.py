#!/usr/bin/env python3
"""Renders chat cases with a Jinja chat template the way transformers' apply_chat_template does
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, raise_exception, bos_token "<bos>"),
for gemma3_chat_template_test.cc, which compares the results with g4's RenderChat.

Usage: gemma3_chat_template_render.py TEMPLATE CASES_JSON OUT_JSON
CASES_JSON: [{"messages": [...], "add_generation_prompt": bool}, ...]. A "developer" message is
given to the template as "system" (g4 reads developer as OpenAI's name for system; Google's
template knows only system). OUT_JSON: [{"ok": true, "text": ...} | {"ok": false, "error": ...}].
Exits 77 without jinja2.
"""
import json
import sys

try:
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("skipped: python3 jinja2 is not installed")
    sys.exit(77)


def main():
    template_path, cases_path, out_path = sys.argv[1:4]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    with open(template_path, encoding="utf-8") as f:
        template = env.from_string(f.read())
    with open(cases_path, encoding="utf-8") as f:
        cases = json.load(f)
    results = []
    for case in cases:
        messages = [dict(m, role="system") if m.get("role") == "developer" else m
                    for m in case["messages"]]
        try:
            text = template.render(messages=messages, bos_token="<bos>",
                                   add_generation_prompt=case.get("add_generation_prompt", True))
            results.append({"ok": True, "text": text})
        except Exception as e:  # the template's raise_exception, or a Jinja error
            results.append({"ok": False, "error": f"{type(e).__name__}: {e}"})
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(results, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
