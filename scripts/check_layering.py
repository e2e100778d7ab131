#!/usr/bin/env python3
"""Checks that every #include in src/ and tools/ follows g4's layering (docs/ARCHITECTURE.md):

    core <- loader, tokenizer <- chat, kernels <- ops <- model <- runtime <- server <- tools
    model <- synthetic <- tools (g4 make-model; the tests link it too)

and, inside model/, that the runtime side sees only the interface (model/causal_lm.h and the
KV store, step graphs and load options it uses), never a concrete architecture, its config or
the shared decoder blocks; that the server includes no model header at all; that model/decoder/
(the blocks every Gemma shares) includes no architecture; and that model/, runtime/ and server/
never include SIMD (Highway) or device (CUDA) headers. A wrong include fails the test with the
file, the line and the rule. Run by ctest (test "layering"); exits 1 on any violation.

    python3 scripts/check_layering.py [REPO]
"""
import os
import re
import sys

# The model's interface: what runtime, server-side glue and the front ends may include.
MODEL_API = ["model/causal_lm.h", "model/kv_store.h", "model/step_graphs.h",
             "model/load_options.h", "model/registry.h"]
MODEL_SHARED = ["model/causal_lm.h", "model/kv_store.h", "model/step_graphs.h",
                "model/load_options.h", "model/config.h", "model/decoder"]

# (path prefix, allowed include prefixes). The longest matching path prefix decides.
RULES = [
    ("src/core/", ["core"]),
    ("src/loader/", ["core", "loader"]),
    ("src/tokenizer/", ["core", "loader", "tokenizer"]),
    ("src/chat/", ["core", "loader", "tokenizer", "chat"]),
    ("src/hub/", ["core", "loader", "hub"]),
    ("src/kernels/ref/", ["core", "ops", "kernels/ref"]),
    ("src/kernels/cpu/", ["core", "ops", "kernels/cpu", "hwy"]),  # Highway's own quotes
    ("src/kernels/cuda/", ["core", "ops", "kernels/cuda", "kernels/cpu", "kernels/ref"]),
    ("src/ops/", ["core", "ops", "kernels"]),
    # model/ root: the interface and what every architecture shares; registry.cc alone names
    # the architectures.
    ("src/model/", ["core", "loader", "ops"] + MODEL_SHARED),
    ("src/model/registry.cc", ["core", "loader", "ops", "model"]),
    ("src/model/decoder/", ["core", "loader", "ops"] + MODEL_SHARED),
    ("src/model/gemma4/", ["core", "loader", "ops", "model/gemma4"] + MODEL_SHARED),
    ("src/model/gemma3/", ["core", "loader", "ops", "model/gemma3"] + MODEL_SHARED),
    # Synthetic checkpoints write Gemma 4's tensors under its names: its internals are theirs.
    ("src/synthetic/", ["core", "loader", "ops", "model", "synthetic"]),
    ("src/runtime/", ["core", "ops", "tokenizer", "chat", "runtime"] + MODEL_API),
    ("src/server/", ["core", "loader/json_file.h", "tokenizer", "chat", "runtime", "server"]),
    # Front ends: the interface and the registry; only make-model writes Gemma 4 checkpoints.
    ("tools/", ["core", "loader", "hub", "ops", "tokenizer", "chat", "runtime", "server"] +
     MODEL_API),
    ("tools/cli/make_model_command.cc", ["core", "loader", "tokenizer", "synthetic/gemma4.h"]),
]
# System headers that must stay out of the device-independent layers.
DEVICE_HEADERS = re.compile(r"^(hwy/|cuda|cublas|nvml|thrust/|cub/)")
NO_DEVICE_HEADERS = ("src/model/", "src/runtime/", "src/server/", "src/tokenizer/", "src/chat/",
                     "src/loader/", "src/synthetic/")

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def rule_for(rel):
    best = None
    for prefix, allowed in RULES:
        if rel.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, allowed)
    return best


def allowed(include, prefixes):
    return any(include == p or include.startswith(p.rstrip("/") + "/") for p in prefixes)


def main():
    repo = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems = []
    checked = 0
    for top in ("src", "tools"):
        for root, _, files in os.walk(os.path.join(repo, top)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cu", ".cuh")):
                    continue
                path = os.path.join(root, name)
                rel = os.path.relpath(path, repo).replace(os.sep, "/")
                rule = rule_for(rel)
                with open(path, encoding="utf-8") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        kind, inc = m.groups()
                        checked += 1
                        if rel.startswith(NO_DEVICE_HEADERS) and DEVICE_HEADERS.match(inc):
                            problems.append(f"{rel}:{n}: {inc}: {rel.split('/')[1]}/ must not "
                                            "include SIMD or device headers")
                            continue
                        if kind == "<":
                            continue
                        if "/" not in inc or rule is None:
                            continue  # a file of the same folder (tools/cli's own headers)
                        if not allowed(inc, rule[1]):
                            problems.append(f'{rel}:{n}: "{inc}" is not allowed here (files '
                                            f"under {rule[0]} may include {', '.join(rule[1])})")
    for p in problems:
        print(p)
    print(f"layering: {checked} includes checked, {len(problems)} violations")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
