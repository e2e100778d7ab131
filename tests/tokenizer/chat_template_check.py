#!/usr/bin/env python3
"""Checks that the chat_template.jinja g4 ships in checkpoints (src/tokenizer/chat_template_text.cc)
renders exactly what g4's RenderChat renders (`g4 tokenize --chat F --prompt`), under the Jinja
settings transformers' apply_chat_template uses, for both template forms (E2B/E4B and 26B/31B,
which `g4` must also tell apart from the file).

Usage: chat_template_check.py G4_BINARY SOURCE_DIR. Exits 77 (ctest: skipped) without jinja2.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

try:
    from jinja2.sandbox import ImmutableSandboxedEnvironment
except ImportError:
    print("skipped: python3 jinja2 is not installed")
    sys.exit(77)

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather for a city",
    "parameters": {"type": "object", "required": ["location"], "properties": {
        "location": {"type": "string", "description": "City name"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer"}}}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search",
    "parameters": {"type": "object", "required": ["q"], "properties": {
        "q": {"type": "string"},
        "filters": {"type": "object", "description": "F",
                    "properties": {"lang": {"type": "string"}}, "required": ["lang"]},
        "tags": {"type": "array", "items": {"type": "string"}, "nullable": True},
        "pts": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}},
                                           "required": ["x"]}},
        "Mixed": {"type": "boolean"}}},
    "response": {"description": "Results", "type": "object"}}}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"location": "Tokyo", "days": 2}}}

CASES = [
    {"messages": [{"role": "user", "content": "Hello"}]},
    {"messages": [{"role": "system", "content": "You are a helpful assistant."},
                  {"role": "user", "content": "Hello"}]},
    {"messages": [{"role": "developer", "content": "  Be brief.\n"},
                  {"role": "user", "content": "\n Hi \t"}]},
    {"messages": [{"role": "user", "content": "What is 2+2?"},
                  {"role": "assistant", "content": "<|channel>thought\nadd<channel|>2+2 is 4."},
                  {"role": "user", "content": "And 3+3?"}]},
    {"messages": [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "A"}],
     "add_generation_prompt": False},
    {"messages": [{"role": "system", "content": "You are helpful."},
                  {"role": "user", "content": "Hi"}], "enable_thinking": True},
    {"messages": [{"role": "user", "content": "Hi"}], "enable_thinking": True},
    {"messages": [{"role": "system", "content": "Use tools."}, {"role": "user", "content": "Weather?"}],
     "tools": [WEATHER, SEARCH, {"type": "function", "function": {"name": "now"}}]},
    {"messages": [{"role": "user", "content": "Weather in Tokyo?"},
                  {"role": "assistant", "content": None, "reasoning_content": "Need the tool.",
                   "tool_calls": [CALL]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}],
     "tools": [WEATHER]},
    {"messages": [{"role": "user", "content": "Weather in Tokyo?"},
                  {"role": "assistant", "tool_calls": [
                      {"id": "c1", "function": {"name": "f", "arguments": {
                          "nested": {"B": [1, 2.5, "x", True, None], "a": {"z": False}}}}},
                      {"id": "c2", "function": {"name": "other", "arguments": {}}}]},
                  {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                  {"role": "tool", "tool_call_id": "c2", "name": "zzz",
                   "content": [{"type": "text", "text": "part1 "}, {"type": "text", "text": "part2"}]},
                  {"role": "assistant", "content": "It is sunny."},
                  {"role": "user", "content": "thanks"}]},
    {"messages": [{"role": "user", "content": "a"},
                  {"role": "assistant", "tool_calls": [CALL]}]},
    {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                  {"role": "assistant", "content": "How can I help?"}]},
    {"messages": [{"role": "user", "content": [{"type": "text", "text": " look "}, {"type": "image"},
                                               {"type": "text", "text": "this"}]}]},
    {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                  {"role": "system", "content": "late"}, {"role": "developer", "content": "dev"},
                  {"role": "user", "content": "q2"}]},
    {"messages": [{"role": "assistant", "reasoning_content": "r0", "tool_calls": [CALL]},
                  {"role": "tool", "tool_call_id": "call_1", "content": "ok"}],
     "enable_thinking": True},
]


def templates(source_dir):
    text = open(os.path.join(source_dir, "src/tokenizer/chat_template_text.cc"), encoding="utf-8").read()
    parts = dict(re.findall(r'constexpr const char\* (k\w+) =\s*R"JINJA\((.*?)\)JINJA"', text, re.S))
    return {False: parts["kHead"] + parts["kTail"],
            True: parts["kHead"] + parts["kLargeModelGenerationPrompt"] + parts["kTail"]}


def main():
    g4, source_dir = sys.argv[1], sys.argv[2]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)

    def raise_exception(message):
        raise ValueError(message)

    env.globals["raise_exception"] = raise_exception
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for large, source in templates(source_dir).items():
            model = os.path.join(tmp, "large" if large else "small")
            os.makedirs(model)
            with open(os.path.join(model, "chat_template.jinja"), "w", encoding="utf-8") as f:
                f.write(source)
            template = env.from_string(source)
            for i, case in enumerate(CASES):
                chat = os.path.join(tmp, "chat.json")
                with open(chat, "w", encoding="utf-8") as f:
                    json.dump(case, f)
                ours = subprocess.run([g4, "tokenize", "--model", model, "--chat", chat, "--prompt"],
                                      capture_output=True, check=True).stdout.decode("utf-8")
                kwargs = {"messages": case["messages"], "bos_token": "<bos>",
                          "add_generation_prompt": case.get("add_generation_prompt", True)}
                if "tools" in case:
                    kwargs["tools"] = case["tools"]
                if case.get("enable_thinking"):
                    kwargs["enable_thinking"] = True
                want = template.render(**kwargs)
                if ours != want:
                    failures += 1
                    print(f"case {i} ({'26B/31B' if large else 'E2B/E4B'} form) differs:\n"
                          f"  jinja: {want!r}\n  g4:    {ours!r}")
    print(f"{2 * len(CASES) - failures} of {2 * len(CASES)} renders agree")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
